"""bench/launch.py, the one launcher of tests, bench and compat: a lost port race is retried on
fresh ports, any other failure is reported at once, and a process is stopped by its pid."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest

from bench import launch


def test_free_ports_are_distinct_loopback_ports() -> None:
    ports = launch.free_ports(3)
    assert len(set(ports)) == 3 and all(0 < p < 65536 for p in ports)


def test_a_clean_environment_drops_the_callers_settings_and_finds_the_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OKURI_LINGER_MS", "7")
    monkeypatch.setenv("AWS_PROFILE", "mine")
    monkeypatch.setenv("PYTHONPATH", "elsewhere")
    env = launch.clean_environ()
    assert "OKURI_LINGER_MS" not in env and env["AWS_PROFILE"] == "mine"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(launch.ROOT), "elsewhere"]
    bare = launch.clean_environ(("AWS_", "OKURI_"), checkout=False)
    assert "AWS_PROFILE" not in bare and bare["PYTHONPATH"] == "elsewhere"


def test_a_port_lost_to_a_race_is_retried_on_fresh_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind((launch.LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        real = launch.free_ports
        calls: list[int] = []

        def first_taken(count: int) -> list[int]:
            calls.append(count)
            return [port, *real(count - 1)] if len(calls) == 1 else real(count)

        monkeypatch.setattr(launch, "free_ports", first_taken)
        served = launch.start_serve({"OKURI_DATA_DIR": str(tmp_path / "data")}, tmp_path / "log")
    try:
        assert len(calls) == 2 and served.port != port
        assert launch.answers(served.health_url + "/readyz")
        assert launch.LOST_PORT in (tmp_path / "log").read_text()
    finally:
        assert served.process.stop() == 0


def test_a_server_that_refuses_its_settings_is_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(launch.LaunchError) as failed:
        launch.start_serve({"OKURI_LINGER_MS": "abc"}, tmp_path / "log")
    assert "did not become ready" in str(failed.value)
    assert "OKURI_LINGER_MS='abc'" in str(failed.value)  # the log's tail
    assert (tmp_path / "log").read_text().count("OKURI_LINGER_MS='abc'") == 1  # one attempt


def test_a_process_that_ignores_sigterm_is_killed_by_its_pid(tmp_path: Path) -> None:
    stubborn = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('up', flush=True); time.sleep(60)"
    )
    process = launch.spawn([sys.executable, "-c", stubborn], {}, tmp_path / "log", stop_s=0.5)
    deadline = time.monotonic() + 30
    while "up" not in launch.tail(tmp_path / "log") and time.monotonic() < deadline:
        time.sleep(0.02)  # until it ignores SIGTERM
    assert launch.terminate(process.proc, 0.5) is False
    assert process.proc.returncode == -9 and not process.running()
