"""okuri_celery's heartbeat without a broker: the plan, the beat against a fake SQS, the settings,
and the bridge from a Celery request. No servers, no threads, no sleeping: time is a variable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from okuri_celery import (
    Heartbeat,
    HeartbeatSettings,
    Held,
    held_from_request,
    plan,
    settings_from_conf,
)
from okuri_celery.heartbeat import BATCH_ENTRIES_MAX

SETTINGS = HeartbeatSettings(visibility_s=30, interval_s=10, hold_s_max=100, held_max=50)


@dataclass
class FakeSqs:
    """Extends the receipts it holds as in flight; refuses the rest as SQS does."""

    inflight: set[str] = field(default_factory=set)
    error: Exception | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def change_message_visibility_batch(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        ok, failed = [], []
        for entry in kwargs["Entries"]:
            if entry["ReceiptHandle"] in self.inflight:
                ok.append({"Id": entry["Id"]})
            else:
                failed.append(
                    {
                        "Id": entry["Id"],
                        "SenderFault": True,
                        "Code": "AWS.SimpleQueueService.MessageNotInflight",
                        "Message": "Message is not in flight.",
                    }
                )
        return {"Successful": ok, "Failed": failed}


class Clock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def held(
    client: FakeSqs, receipt: str, *, queue: str = "q", done: list[bool] | None = None
) -> Held:
    flag = done if done is not None else [False]
    return Held(queue, receipt, client, lambda: flag[0], task=f"t[{receipt}]")


def test_plan_drops_settled_and_over_age_entries_and_batches_the_rest_by_client_and_queue() -> None:
    a, b = FakeSqs(), FakeSqs()
    entries = [held(a, f"r{i}") for i in range(BATCH_ENTRIES_MAX + 3)]
    entries.append(held(a, "other-queue", queue="q2"))
    entries.append(held(b, "other-client"))
    entries.append(held(a, "settled", done=[True]))
    old = held(a, "old")
    old.held_since_s = -1000
    entries.append(old)

    decided = plan(entries, now_s=0.0, settings=SETTINGS)

    assert [(reason, e.receipt_handle) for e, reason in decided.dropped] == [
        ("settled", "settled"),
        ("held longer than 100 s", "old"),
    ]
    sizes = sorted((client is a, queue, len(batch)) for client, queue, batch in decided.batches)
    assert sizes == [(False, "q", 1), (True, "q", 3), (True, "q", 10), (True, "q2", 1)]


def test_a_beat_extends_what_is_held_and_forgets_it_once_settled() -> None:
    sqs, clock = FakeSqs({"r1", "r2"}), Clock()
    heartbeat = Heartbeat(SETTINGS, monotonic=clock)
    done = [False]
    heartbeat.hold(held(sqs, "r1", done=done))
    heartbeat.hold(held(sqs, "r2"))

    report = heartbeat.beat()
    assert report.extended == 2 and report.dropped == 0
    assert sqs.calls[-1]["QueueUrl"] == "q"
    assert {e["VisibilityTimeout"] for e in sqs.calls[-1]["Entries"]} == {30}

    done[0] = True  # acknowledged: the task succeeded, failed, retried or was revoked
    report = heartbeat.beat()
    assert report.extended == 1 and report.dropped == 1
    assert [e["ReceiptHandle"] for e in sqs.calls[-1]["Entries"]] == ["r2"]
    assert [entry.receipt_handle for entry in heartbeat.held()] == ["r2"]


def test_a_receipt_sqs_refuses_is_dropped_and_a_failed_call_is_retried_next_beat() -> None:
    sqs = FakeSqs({"alive"})
    heartbeat = Heartbeat(SETTINGS, monotonic=Clock())
    heartbeat.hold(held(sqs, "alive"))
    heartbeat.hold(held(sqs, "deleted-elsewhere"))

    report = heartbeat.beat()
    assert report.extended == 1 and report.reasons == ["AWS.SimpleQueueService.MessageNotInflight"]
    assert [entry.receipt_handle for entry in heartbeat.held()] == ["alive"]

    sqs.error = ConnectionError("okuri unreachable")
    report = heartbeat.beat()
    assert report.failed_calls == 1 and report.dropped == 0
    assert [entry.receipt_handle for entry in heartbeat.held()] == ["alive"]

    gone = Exception("QueueDoesNotExist")
    gone.response = {"Error": {"Code": "QueueDoesNotExist"}}  # type: ignore[attr-defined]
    sqs.error = gone
    assert heartbeat.beat().dropped == 1
    assert heartbeat.held() == []


def test_holding_stops_after_hold_s_max_and_beyond_held_max() -> None:
    sqs, clock = FakeSqs({f"r{i}" for i in range(60)}), Clock()
    heartbeat = Heartbeat(SETTINGS, monotonic=clock)
    accepted = [heartbeat.hold(held(sqs, f"r{i}")) for i in range(60)]
    assert accepted.count(True) == SETTINGS.held_max

    clock.now_s += SETTINGS.hold_s_max
    report = heartbeat.beat()
    assert report.extended == 0 and report.dropped == SETTINGS.held_max
    assert heartbeat.held() == []


def test_settings_default_to_the_transport_visibility_and_a_beat_every_third_of_it() -> None:
    conf = {"broker_transport_options": {"visibility_timeout": 60}}
    assert settings_from_conf(conf) == HeartbeatSettings(visibility_s=60, interval_s=20.0)
    assert settings_from_conf({}).visibility_s == 1800  # kombu's default
    custom = {**conf, "okuri_heartbeat_visibility_s": 90, "okuri_heartbeat_interval_s": 15}
    assert settings_from_conf(custom) == HeartbeatSettings(visibility_s=90, interval_s=15.0)


@pytest.mark.parametrize(("visibility_s", "interval_s"), [(30, 30), (30, 0), (0, 1), (43_201, 10)])
def test_settings_that_let_a_message_expire_between_beats_are_refused(
    visibility_s: int, interval_s: float
) -> None:
    with pytest.raises(ValueError):
        HeartbeatSettings(visibility_s=visibility_s, interval_s=interval_s)


# --- the Celery side, with stand-ins for kombu's SQS channel and Celery's request ------------


class Channel:
    closed = False

    def __init__(self) -> None:
        self.client = FakeSqs()
        self.asked: list[str | None] = []

    def canonical_queue_name(self, name: str) -> str:
        return name.replace(".", "-")

    def sqs(self, queue: str | None = None) -> FakeSqs:
        self.asked.append(queue)
        return self.client


@dataclass
class Message:
    channel: Any
    delivery_info: dict[str, Any]
    acknowledged: bool = False


@dataclass
class Request:
    message: Message
    acknowledged: bool = False
    name: str = "app.task"
    id: str = "task-id"


def sqs_request(channel: Any) -> Request:
    info = {
        "routing_key": "jobs.high",
        "sqs_queue": "http://okuri/000000000000/jobs-high",
        "sqs_message": {"ReceiptHandle": "receipt-1"},
    }
    return Request(Message(channel, info))


def test_a_request_from_sqs_becomes_an_entry_on_the_transports_own_client() -> None:
    channel = Channel()
    request = sqs_request(channel)
    entry = held_from_request(request)

    assert entry is not None
    assert entry.queue_url == "http://okuri/000000000000/jobs-high"
    assert entry.receipt_handle == "receipt-1"
    assert entry.client is channel.client and channel.asked == ["jobs-high"]
    assert entry.task == "app.task[task-id]"
    assert not entry.settled()
    request.acknowledged = True
    assert entry.settled()


def test_an_entry_is_settled_when_its_message_is_or_its_channel_closes() -> None:
    channel = Channel()
    request = sqs_request(channel)
    entry = held_from_request(request)
    assert entry is not None
    request.message.acknowledged = True  # rejected or requeued through kombu directly
    assert entry.settled()

    other = held_from_request(sqs_request(channel))
    assert other is not None and not other.settled()
    channel.closed = True  # kombu restores the channel's unacked messages itself
    assert other.settled()


def test_a_request_from_another_transport_is_not_held() -> None:
    class AmqpChannel:
        pass

    request = Request(Message(AmqpChannel(), {"routing_key": "jobs"}))
    assert held_from_request(request) is None
