"""okuri's pytest plugin sent to an okuri running elsewhere (`--okuri-url`, OKURI_TEST_URL), as
users point it at the compose stack: here a real `okuri serve` process this test starts.
Bad settings are pytest usage errors that say what to give instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.launch import free_ports
from okuri.client import Client
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, serve

ADMIN_KEY = "plugin-external-admin-key-0123"


@pytest.fixture
def external(tmp_path: Path) -> Iterator[ServerProcess]:
    """A ready `okuri serve` on free loopback ports (tests/servers.py), stopped by its pid."""
    server = serve(
        {
            "OKURI_DATA_DIR": str(tmp_path / "data"),
            "OKURI_ACCESS_KEY_ID": SQS_KEY,
            "OKURI_SECRET_ACCESS_KEY": SQS_SECRET,
            "OKURI_ADMIN_KEY": ADMIN_KEY,
        },
        tmp_path / "okuri.log",
    )
    yield server
    server.kill()


SUITE = """
import pytest


def test_1_starts_from_an_empty_okuri_and_leaves_a_queue(okuri_server, okuri_sqs, okuri_client):
    assert okuri_server.endpoint_url == "{url}" and not okuri_server.in_process
    assert okuri_client.list_queues().queues == ()
    assert okuri_client.list_exchanges().exchanges == ()
    okuri_sqs.create_queue(QueueName="from-test-1")


def test_2_starts_empty_again(okuri_sqs):
    assert okuri_sqs.list_queues().get("QueueUrls", []) == []
    okuri_sqs.create_queue(QueueName="made-by-the-suite")
"""


def leave_a_queue_and_an_exchange(server: ServerProcess) -> None:
    """What an earlier run left on the server: the suite must start without it."""
    server.sqs_client().create_queue(QueueName="from-before-the-run")
    with Client(server.url, ADMIN_KEY) as client:
        client.create_exchange("old-news", "fanout")


def queue_names(server: ServerProcess) -> list[str]:
    urls = server.sqs_client().list_queues().get("QueueUrls", [])
    return sorted(url.rsplit("/", 1)[1] for url in urls)


def test_the_fixtures_use_the_okuri_the_options_name(
    pytester: pytest.Pytester, external: ServerProcess
) -> None:
    leave_a_queue_and_an_exchange(external)
    pytester.makepyfile(test_suite=SUITE.format(url=external.url))
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--okuri-url={external.url}/",
        f"--okuri-access-key-id={SQS_KEY}",
        f"--okuri-secret-access-key={SQS_SECRET}",
        f"--okuri-admin-key={ADMIN_KEY}",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"okuri: tests use the okuri at {external.url}"])
    assert queue_names(external) == ["made-by-the-suite"]  # what the last test left


def test_the_environment_variables_name_it_too(
    pytester: pytest.Pytester, external: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    leave_a_queue_and_an_exchange(external)
    monkeypatch.setenv("OKURI_TEST_URL", external.url)
    monkeypatch.setenv("OKURI_TEST_ACCESS_KEY_ID", SQS_KEY)
    monkeypatch.setenv("OKURI_TEST_SECRET_ACCESS_KEY", SQS_SECRET)
    monkeypatch.setenv("OKURI_TEST_ADMIN_KEY", ADMIN_KEY)
    pytester.makepyfile(test_suite=SUITE.format(url=external.url))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
    assert queue_names(external) == ["made-by-the-suite"]


def test_without_an_admin_key_sqs_still_works_and_the_native_client_says_what_is_missing(
    pytester: pytest.Pytester, external: ServerProcess
) -> None:
    external.sqs_client().create_queue(QueueName="from-before-the-run")
    pytester.makepyfile(
        test_suite="""
        def test_sqs(okuri_sqs):
            assert okuri_sqs.list_queues().get("QueueUrls", []) == []

        def test_native(okuri_client):
            pass
        """
    )
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        f"--okuri-url={external.url}",
        f"--okuri-access-key-id={SQS_KEY}",
        f"--okuri-secret-access-key={SQS_SECRET}",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*no native API admin key is known*--okuri-admin-key*"])


def test_an_unreachable_okuri_fails_the_test_naming_it(pytester: pytest.Pytester) -> None:
    [port] = free_ports(1)
    pytester.makepyfile(test_suite="def test_x(okuri_sqs):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--okuri-url=http://127.0.0.1:{port}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*emptying the okuri at http://127.0.0.1:{port} before*"])


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("localhost:8080", "expected http://HOST:PORT or https://HOST:PORT"),
        ("ftp://localhost:8080", "expected http://HOST:PORT or https://HOST:PORT"),
        ("http://localhost:99999", "is not a URL"),
        ("http://localhost:8080/queues", "without a path or query"),
    ],
)
def test_a_malformed_url_is_a_usage_error(pytester: pytest.Pytester, url: str, says: str) -> None:
    pytester.makepyfile(test_suite="def test_x(okuri_sqs):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--okuri-url={url}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--okuri-url: '{url}'*{says}*"])


def test_a_malformed_url_in_the_environment_is_named_as_such(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OKURI_TEST_URL", "okuri:8080")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*OKURI_TEST_URL: 'okuri:8080'*"])


def test_one_external_okuri_under_several_xdist_workers_is_refused_saying_why(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite="def test_x(okuri_sqs):\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--okuri-url=http://127.0.0.1:8080", timeout=120
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--okuri-url with -n 2*deleting the queues of the others*"])
