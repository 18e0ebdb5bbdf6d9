"""ministack as the benches' peer: installed once into its own virtualenv, skipped with one line
when it cannot be, started on 127.0.0.1 by environment variables and stopped by its pid.

Most of these use a stand-in `ministack` program (a few lines of Python answering the health
endpoint) so they need no package registry; one slow test installs and runs the real one, and
is skipped, saying why, when the registry cannot be reached.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from bench import ministack, sqs, sqs_report
from bench.servers import BenchError, Unavailable

# Answers GET /_ministack/health on BIND_HOST:GATEWAY_PORT, as ministack does, and notes its env.
FAKE_MINISTACK = """#!{python}
import http.server, json, os, pathlib
pathlib.Path(os.environ["TMPDIR"], "env.json").write_text(json.dumps(dict(os.environ)))
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/_ministack/health" else 404)
        self.end_headers()
    def log_message(self, *_):
        pass
addr = (os.environ["BIND_HOST"], int(os.environ["GATEWAY_PORT"]))
http.server.HTTPServer(addr, Health).serve_forever()
"""


def _installed(root: Path, program: str) -> ministack.Install:
    """An install under `root` whose `ministack` is `program`, stamped complete."""
    where = ministack.Install(root)
    where.program.parent.mkdir(parents=True)
    where.program.write_text(program.format(python=sys.executable))
    where.program.chmod(where.program.stat().st_mode | stat.S_IXUSR)
    where.stamp.write_text(ministack.PACKAGE)
    return where


def _executable(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_an_install_that_fails_is_unavailable_and_says_what_to_install(tmp_path: Path) -> None:
    no_venv = _executable(tmp_path / "python", "#!/bin/sh\necho no venv here >&2\nexit 3\n")
    with pytest.raises(Unavailable) as why:
        ministack.ensure(tmp_path / "peers", python=no_venv)
    message = str(why.value)
    assert "\n" not in message and "python -m venv exited 3" in message
    assert f"pip install {ministack.PACKAGE}" in message
    where = ministack.Install(tmp_path / "peers")
    assert "no venv here" in where.log_path.read_text()
    assert not where.venv.exists()  # nothing half-made is left to be taken for an install


def test_a_stamped_install_is_reused_without_running_anything(tmp_path: Path) -> None:
    where = _installed(tmp_path, FAKE_MINISTACK)
    assert ministack.ensure(tmp_path, python="/nonexistent/python") == where


def test_an_unstamped_install_is_made_again(tmp_path: Path) -> None:
    where = _installed(tmp_path, FAKE_MINISTACK)
    where.stamp.unlink()  # an install cut short: pip may have left it half-made
    failing = _executable(tmp_path / "python", "#!/bin/sh\nexit 1\n")
    with pytest.raises(Unavailable):
        ministack.ensure(tmp_path, python=failing)
    assert not where.program.exists()


def test_the_server_binds_loopback_by_env_and_is_stopped_by_its_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _installed(tmp_path / "peers", FAKE_MINISTACK)
    monkeypatch.setenv("PYTHONPATH", "/okuri/packages")  # would hand it okuri's botocore
    monkeypatch.setenv("OKURI_LINGER_MS", "7")
    with ministack.ministack_server(tmp_path, root=tmp_path / "peers") as server:
        assert server.endpoint.startswith("http://127.0.0.1:") and server.process.running()
        env = json.loads((tmp_path / "ministack-tmp" / "env.json").read_text())
    assert server.process.proc.returncode is not None  # stopped on the way out
    assert env["BIND_HOST"] == "127.0.0.1" and env["SERVICES"] == "sqs"
    assert server.endpoint.endswith(":" + env["GATEWAY_PORT"])
    assert "PYTHONPATH" not in env and not any(k.startswith("OKURI_") for k in env)


def test_a_server_that_will_not_answer_is_a_bench_error(tmp_path: Path) -> None:
    _installed(tmp_path / "peers", "#!/bin/sh\necho cannot serve\nexit 1\n")
    with (
        pytest.raises(BenchError, match="ministack did not become ready"),
        ministack.ministack_server(tmp_path, root=tmp_path / "peers"),
    ):
        pass


@pytest.mark.slow  # installs ministack on first use (about ten seconds), starts two servers
def test_bench_sqs_moves_the_same_count_through_okuri_and_ministack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        ministack.ensure()
    except Unavailable as why:
        pytest.skip(f"ministack cannot be installed here (needs the package registry): {why}")
    argv = ["--producers", "2", "--consumers", "2", "--messages", "300", "--seconds", "20"]
    argv += ["--warmup-seconds", "0.5", "--drain-seconds", "3", "--peer", "ministack", "--json"]
    assert sqs.cli_main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["peer"] == "ministack" and result["peer_skipped"] is None
    [okuri], peer = result["okuri"], result["peer"]
    assert peer["target"] == "ministack" and peer["endpoint"].startswith("http://127.0.0.1:")
    for figures in (okuri, peer):
        assert figures["messages_sent"] == figures["messages_deleted"] == 300
        assert figures["errors"] == 0, figures["first_error"]
    assert peer["server"]["exit_code"] == 0
    assert okuri["ratio_to_peer"] == pytest.approx(
        okuri["messages_per_s"] / peer["messages_per_s"], abs=0.01
    )
    assert "okuri x1/ministack, messages/s end to end: " in sqs_report.render(result)
