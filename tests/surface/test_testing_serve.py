"""`okuri.testing.serve()` outside pytest's fixtures: a context manager and a decorator, as
moto's `mock_aws` is, that points the AWS SDKs' variables at a fresh okuri and puts them back."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import boto3
import pytest

from okuri.testing import OkuriServer, serve
from tests.readme import environment

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def users_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a developer's shell might hold: serve() must hide it inside and put it back."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://the-users-own:1")
    monkeypatch.setenv("AWS_PROFILE", "the-users-profile")
    monkeypatch.delenv("AWS_ENDPOINT_URL_SQS", raising=False)
    monkeypatch.delenv("OKURI_TEST_URL", raising=False)


def queue_names(okuri: OkuriServer) -> list[str]:
    urls = okuri.sqs_client().list_queues().get("QueueUrls", [])
    return [url.rsplit("/", 1)[1] for url in urls]


@pytest.mark.usefixtures("users_environment")
def test_as_a_context_manager_it_points_boto3_at_okuri_and_puts_the_environment_back() -> None:
    with serve() as okuri:
        assert os.environ["AWS_ENDPOINT_URL"] == okuri.endpoint_url
        assert os.environ["AWS_ENDPOINT_URL_SQS"] == okuri.endpoint_url
        assert "AWS_PROFILE" not in os.environ
        boto3.client("sqs").create_queue(QueueName="from-the-app")
        assert queue_names(okuri) == ["from-the-app"]
        okuri.reset()
        assert queue_names(okuri) == []
    assert os.environ["AWS_ENDPOINT_URL"] == "http://the-users-own:1"
    assert os.environ["AWS_PROFILE"] == "the-users-profile"
    assert "AWS_ENDPOINT_URL_SQS" not in os.environ


@pytest.mark.usefixtures("users_environment")
def test_without_env_it_leaves_the_environment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_PROFILE")  # botocore refuses to run under a profile that is not there
    with serve(env=False) as okuri:
        assert os.environ["AWS_ENDPOINT_URL"] == "http://the-users-own:1"
        okuri.sqs_client().create_queue(QueueName="by-hand")
        assert queue_names(okuri) == ["by-hand"]


@pytest.mark.usefixtures("users_environment")
def test_as_a_decorator_each_call_gets_an_empty_okuri_of_its_own() -> None:
    seen: list[tuple[str, list[str]]] = []

    @serve()
    def application_test() -> None:
        sqs = boto3.client("sqs")
        seen.append((os.environ["AWS_ENDPOINT_URL"], sqs.list_queues().get("QueueUrls", [])))
        sqs.create_queue(QueueName="made-in-the-call")

    application_test()
    application_test()
    assert [queues for _, queues in seen] == [[], []]
    assert all(url.startswith("http://127.0.0.1:") for url, _ in seen)
    assert os.environ["AWS_ENDPOINT_URL"] == "http://the-users-own:1"


def test_one_serve_cannot_be_entered_twice_at_once() -> None:
    serving = serve(env=False)
    with serving, pytest.raises(RuntimeError, match="in use"), serving:
        pytest.fail("the inner block must not run")


def test_a_unittest_case_runs_with_it(tmp_path: Path) -> None:
    (tmp_path / "test_orders.py").write_text(
        textwrap.dedent(
            """
            import unittest

            import boto3

            from okuri.testing import serve


            class Orders(unittest.TestCase):
                @classmethod
                def setUpClass(cls):
                    cls.okuri = cls.enterClassContext(serve())

                def setUp(self):
                    self.okuri.reset()

                def test_a_queue(self):
                    boto3.client("sqs").create_queue(QueueName="orders")
                    self.assertEqual(len(boto3.client("sqs").list_queues()["QueueUrls"]), 1)

                def test_another_queue(self):
                    boto3.client("sqs").create_queue(QueueName="invoices")
                    self.assertEqual(len(boto3.client("sqs").list_queues()["QueueUrls"]), 1)

                @serve()
                def test_decorated(self):
                    self.assertEqual(boto3.client("sqs").list_queues().get("QueueUrls"), None)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_orders"],
        cwd=tmp_path,
        env={**environment(), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "Ran 3 tests" in done.stderr and "OK" in done.stderr, done.stderr
