"""Celery's own pytest fixtures (`celery.contrib.pytest`) on okuri's pytest plugin: a user's
`celery_config` returns okuri's configuration, and a task runs through okuri in the
in-process worker Celery's `celery_worker` fixture starts, over `sqs://` and `okuri://`."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

INTEGRATIONS = Path(__file__).resolve().parents[3] / "integrations"

TASK_ROUND_TRIP = """
def test_a_task_runs_through_okuri(celery_app, celery_worker, okuri_client):
    @celery_app.task
    def add(x, y):
        return x + y

    celery_worker.reload()
    assert add.delay(2, 3).get(timeout=30) == 5
    assert "celery" in okuri_client.list_queues().queues


def test_the_next_test_starts_from_an_empty_okuri(okuri_client):
    assert okuri_client.list_queues().queues == ()
"""


@pytest.mark.parametrize(
    ("fixture", "scheme"),
    [("okuri_celery_config", "sqs://"), ("okuri_kombu_celery_config", "okuri://")],
)
def test_a_users_celery_suite_runs_its_tasks_through_okuri(
    pytester: pytest.Pytester, fixture: str, scheme: str
) -> None:
    pytester.makeconftest(
        textwrap.dedent(
            f"""
            import sys

            import pytest

            sys.path.insert(0, {str(INTEGRATIONS / "kombu")!r})  # okuri_kombu, not installed here
            pytest_plugins = ("celery.contrib.pytest",)


            @pytest.fixture(scope="session")
            def celery_config({fixture}):
                assert {fixture}["broker_url"].startswith({scheme!r})
                return {fixture}
            """
        )
    )
    pytester.makepyfile(test_tasks=TASK_ROUND_TRIP)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=240)
    result.assert_outcomes(passed=2)
