"""okuri's pytest plugin as a user meets it: users' test files run by pytester, with the plugin
loaded the way users get it (the `pytest11` entry point of the installed okuri), each okuri
started in-process by the plugin itself."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

SUBPROCESS_TIMEOUT_S = 240.0

EVERY_FIXTURE = """
import boto3

from okuri.client import Client


def test_the_server_says_where_it_answers(okuri_server):
    assert okuri_server.endpoint_url.startswith("http://127.0.0.1:")
    assert okuri_server.native_url == okuri_server.endpoint_url
    assert okuri_server.grpc_url == "grpc://" + okuri_server.endpoint_url.removeprefix("http://")
    assert okuri_server.region == "us-east-1"
    assert okuri_server.access_key_id and okuri_server.secret_access_key
    assert okuri_server.admin_key and okuri_server.in_process


def test_a_message_round_trips_over_sqs(okuri_sqs):
    url = okuri_sqs.create_queue(QueueName="orders")["QueueUrl"]
    okuri_sqs.send_message(QueueUrl=url, MessageBody="order 7")
    [message] = okuri_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert message["Body"] == "order 7"


def test_an_item_round_trips_over_the_native_api(okuri_client):
    okuri_client.create_queue("emails")
    okuri_client.produce("emails", ["hello"])
    [item] = okuri_client.lease("emails", request_timeout_s=1)
    assert item.text == "hello"


def test_the_native_api_answers_over_grpc_too(okuri_server, okuri_client):
    okuri_client.create_queue("over-grpc")
    with Client(okuri_server.grpc_url, okuri_server.admin_key) as grpc:
        assert grpc.list_queues().queues == ("over-grpc",)


def test_unchanged_application_code_talks_to_okuri(okuri_env, okuri_client):
    sqs = boto3.client("sqs")  # no endpoint, region or keys: the AWS_* variables give them
    sqs.create_queue(QueueName="made-by-the-app")
    assert okuri_client.list_queues().queues == ("made-by-the-app",)
    assert okuri_env["AWS_ENDPOINT_URL_SQS"] == okuri_env["AWS_ENDPOINT_URL"]


def test_the_celery_configuration_names_the_server(okuri_celery_config, okuri_server):
    address = okuri_server.endpoint_url.removeprefix("http://")
    assert okuri_celery_config["broker_url"].startswith("sqs://")
    assert okuri_celery_config["broker_url"].endswith("@" + address)
    assert okuri_celery_config["broker_transport_options"]["region"] == okuri_server.region
"""


def configure(pytester: pytest.Pytester, line: str) -> None:
    """Add `line` to the suite's [pytest] configuration (tox.ini, tests/conftest.py's
    USERS_INI)."""
    ini = pytester.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip("\n") + "\n" + line + "\n")


def test_a_user_suite_using_every_fixture_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=EVERY_FIXTURE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)


def test_the_variables_okuri_env_set_are_put_back_after_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://the-users-own:1")
    monkeypatch.setenv("AWS_PROFILE", "the-users-profile")
    monkeypatch.delenv("AWS_REGION", raising=False)
    pytester.makepyfile(
        test_env="""
        import os

        def test_inside(okuri_env, okuri_server):
            assert os.environ["AWS_ENDPOINT_URL"] == okuri_server.endpoint_url
            assert os.environ["AWS_REGION"] == okuri_server.region
            assert "AWS_PROFILE" not in os.environ

        def test_after():
            assert os.environ["AWS_ENDPOINT_URL"] == "http://the-users-own:1"
            assert os.environ["AWS_PROFILE"] == "the-users-profile"
            assert "AWS_REGION" not in os.environ
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


ISOLATION = """
def test_1_leaves_a_queue_an_exchange_and_a_message(okuri_sqs, okuri_client):
    url = okuri_sqs.create_queue(QueueName="leftover")["QueueUrl"]
    okuri_sqs.send_message(QueueUrl=url, MessageBody="old")
    okuri_client.create_exchange("leftover-news", "fanout")


def test_2_starts_from_no_queues_and_no_exchanges(okuri_sqs, okuri_client):
    assert okuri_sqs.list_queues().get("QueueUrls", []) == []
    assert okuri_client.list_exchanges().exchanges == ()
    url = okuri_sqs.create_queue(QueueName="leftover")["QueueUrl"]
    assert okuri_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
"""


def test_each_test_starts_from_an_empty_okuri(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_isolation=ISOLATION)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_tests_marked_shared_see_each_others_queues_and_other_modules_do_not(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_a_shared="""
        import pytest

        pytestmark = pytest.mark.okuri_shared


        @pytest.fixture(scope="module")
        def jobs(okuri_sqs):
            return okuri_sqs.create_queue(QueueName="jobs")["QueueUrl"]


        def test_1_sends(okuri_sqs, jobs):
            okuri_sqs.create_queue(QueueName="made-in-test-1")
            okuri_sqs.send_message(QueueUrl=jobs, MessageBody="from test 1")


        def test_2_sees_what_test_1_left(okuri_sqs, jobs):
            names = sorted(u.rsplit("/", 1)[1] for u in okuri_sqs.list_queues()["QueueUrls"])
            assert names == ["jobs", "made-in-test-1"]
            got = okuri_sqs.receive_message(QueueUrl=jobs, WaitTimeSeconds=1)["Messages"]
            assert [m["Body"] for m in got] == ["from test 1"]
        """,
        test_b_alone="""
        def test_3_starts_empty(okuri_sqs):
            assert okuri_sqs.list_queues().get("QueueUrls", []) == []
        """,
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_the_reset_can_be_turned_off_in_the_ini_file(pytester: pytest.Pytester) -> None:
    configure(pytester, "okuri_reset = never")
    pytester.makepyfile(
        test_kept="""
        def test_1(okuri_sqs):
            okuri_sqs.create_queue(QueueName="kept")

        def test_2(okuri_sqs):
            assert len(okuri_sqs.list_queues()["QueueUrls"]) == 1
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_an_unknown_reset_setting_is_a_usage_error(pytester: pytest.Pytester) -> None:
    configure(pytester, "okuri_reset = sometimes")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*okuri_reset = 'sometimes': expected one of test, never*"])


def test_a_failing_test_report_names_the_okuri_it_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fails="""
        def test_uses_okuri(okuri_sqs):
            okuri_sqs.create_queue(QueueName="orders")
            assert False, "the application got it wrong"

        def test_without_okuri():
            assert False, "nothing to do with okuri"
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ test_uses_okuri _*",
            "*the application got it wrong*",
            "*- okuri -*",
            "okuri endpoint: http://127.0.0.1:* (in this process, in memory; region us-east-1;"
            " native API http://127.0.0.1:*/v1/, gRPC grpc://127.0.0.1:*)",
            "*_ test_without_okuri _*",
        ]
    )
    assert result.stdout.str().count("okuri endpoint:") == 1


def test_a_suite_in_two_xdist_workers_passes_each_worker_on_its_own_okuri(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_parallel="""
        import os
        from pathlib import Path

        import pytest


        @pytest.mark.parametrize("n", range(20))
        def test_a_queue_of_one_name_holds_only_this_tests_message(okuri_sqs, okuri_server, n):
            url = okuri_sqs.create_queue(QueueName="jobs")["QueueUrl"]
            okuri_sqs.send_message(QueueUrl=url, MessageBody=str(n))
            got = okuri_sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            )["Messages"]
            assert [m["Body"] for m in got] == [str(n)]
            worker = os.environ["PYTEST_XDIST_WORKER"]
            Path(f"seen-{n}").write_text(f"{worker} {okuri_server.endpoint_url}")


        def test_a_failure_names_the_workers_okuri(okuri_sqs):
            assert False
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", timeout=SUBPROCESS_TIMEOUT_S
    )
    result.assert_outcomes(passed=20, failed=1)
    result.stdout.fnmatch_lines(["okuri endpoint: http://127.0.0.1:* (*xdist worker gw?'s own;*"])
    seen = {tuple(p.read_text().split()) for p in Path(pytester.path).glob("seen-*")}
    workers = {worker for worker, _ in seen}
    endpoints = {endpoint for _, endpoint in seen}
    assert workers == {"gw0", "gw1"}, seen
    assert len(endpoints) == 2 and len(seen) == 2, seen  # one okuri per worker, each its own


def test_the_okuri_kombu_configuration_skips_saying_what_to_install_when_it_is_missing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_kombu="""
        def test_needs_okuri_kombu(okuri_kombu_celery_config):
            pass
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rs", timeout=SUBPROCESS_TIMEOUT_S
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*okuri_kombu*pip install ./integrations/kombu*"])


def test_a_users_suite_runs_without_a_configuration_warning(pytester: pytest.Pytester) -> None:
    """Run in a process of its own, as a user runs it: its whole output is the user's. The
    toolchain's pytest-asyncio warned in every such run while the suites' configuration left
    its fixture loop scope unset."""
    pytester.makepyfile(
        test_quiet="""
        def test_a_queue_listing(okuri_sqs):
            assert okuri_sqs.list_queues().get("QueueUrls", []) == []
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=SUBPROCESS_TIMEOUT_S)
    result.assert_outcomes(passed=1, warnings=0)
    output = result.stdout.str() + result.stderr.str()
    assert '"asyncio_default_fixture_loop_scope" is unset' not in output, output
    assert "Warning" not in output, output


def test_the_plugin_is_found_through_its_entry_point(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help", timeout=SUBPROCESS_TIMEOUT_S)
    result.stdout.fnmatch_lines(["okuri (okuri.testing*", "*--okuri-url=URL*"])


HEAVY = ["boto3", "botocore", "httpx", "aiohttp", "grpc", "okuri.client", "okuri.embedded"]
HEAVY += ["okuri.server", "okuri.engine", "okuri.store", "celery", "kombu"]


def test_importing_the_plugin_imports_no_server_nor_sdk(pytester: pytest.Pytester) -> None:
    script = (
        "import sys, okuri.testing.pytest_plugin\n"
        f"print([name for name in {HEAVY!r} if name in sys.modules])\n"
    )
    result = pytester.run(sys.executable, "-c", script, timeout=60)
    assert result.ret == 0, result.stderr.str()
    assert result.stdout.lines == ["[]"]


def test_a_session_that_asks_for_no_okuri_loads_nothing_more_than_without_the_plugin(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        textwrap.dedent(
            f"""
            import sys

            def pytest_sessionfinish(session):
                print("\\nloaded:", [name for name in {HEAVY!r} if name in sys.modules])
            """
        )
    )
    pytester.makepyfile(test_plain="def test_nothing_of_okuri():\n    pass\n")
    runs = []
    for disabled in ([], ["-p", "no:okuri"]):
        args = ["-p", "no:cacheprovider", "-s", *disabled]
        result = pytester.runpytest_subprocess(*args, timeout=120)
        result.assert_outcomes(passed=1)
        runs.append([line for line in result.stdout.lines if line.startswith("loaded:")])
    with_plugin, without = runs
    assert with_plugin == without and len(with_plugin) == 1, runs
