"""okuri_kombu's lease bookkeeping (LeaseBook, pure) and the keeper that sends it, against the
fake okuri in the fake's time: batches, renewals at half the lease, failures tried again."""

from __future__ import annotations

import logging
import os
import threading
import time

import httpx
import pytest
from fake_okuri import BASE_URL, KEY, QUEUE_DEFAULTS, FakeOkuri, FakeQueue, ManualKeeper
from okuri_kombu.keeper import PACE_S, LeaseKeeper
from okuri_kombu.leases import BATCH_MAX, Batch, LeaseBook

from okuri.client import Client

LEASE_S = 10


class TestLeaseBook:
    def setup_method(self) -> None:
        self.book = LeaseBook(LEASE_S)

    def test_a_held_message_is_due_for_renewal_at_half_its_lease(self) -> None:
        self.book.hold("q", "h1", leased_at=100.0)
        assert self.book.next_renewal() == 105.0
        assert self.book.due(104.9) == []
        assert self.book.due(105.0) == [Batch("extend", "q", ("h1",))]

    def test_a_renewal_sent_moves_the_next_one_half_a_lease_past_its_sending(self) -> None:
        self.book.hold("q", "h1", leased_at=100.0)
        self.book.extended(["h1"], sent_at=105.5)
        assert self.book.next_renewal() == 110.5

    def test_an_acked_message_is_no_longer_renewed_and_its_complete_waits(self) -> None:
        self.book.hold("q", "h1", leased_at=100.0)
        assert self.book.finish("h1", "complete")
        assert self.book.due(200.0) == [] and self.book.next_renewal() is None
        assert self.book.take_finishes() == [Batch("complete", "q", ("h1",))]
        assert self.book.take_finishes() == []

    def test_a_handle_not_held_is_not_finished_twice(self) -> None:
        self.book.hold("q", "h1", leased_at=100.0)
        assert self.book.finish("h1", "complete")
        assert not self.book.finish("h1", "retry")
        assert not self.book.finish("never-leased", "dead")
        assert self.book.take_finishes() == [Batch("complete", "q", ("h1",))]

    def test_finishes_go_in_batches_of_a_hundred_per_queue_and_kind_completes_first(self) -> None:
        for i in range(BATCH_MAX + 1):
            self.book.hold("a", f"a{i}", 0.0)
        self.book.hold("b", "b0", 0.0)
        self.book.hold("b", "b1", 0.0)
        self.book.finish("b0", "dead")
        for i in range(BATCH_MAX + 1):
            self.book.finish(f"a{i}", "complete")
        self.book.finish("b1", "complete")
        batches = self.book.take_finishes()
        assert [(b.kind, b.queue, len(b.handles)) for b in batches] == [
            ("complete", "a", BATCH_MAX),
            ("complete", "a", 1),
            ("complete", "b", 1),
            ("dead", "b", 1),
        ]

    def test_renewals_due_go_in_batches_per_queue(self) -> None:
        for i in range(BATCH_MAX + 2):
            self.book.hold("a" if i % 2 else "b", f"h{i}", 0.0)
        sizes = sorted((b.queue, len(b.handles)) for b in self.book.due(LEASE_S / 2))
        assert sizes == [("a", 51), ("b", 51)]

    def test_finishes_given_back_are_taken_again_and_extends_are_not_kept(self) -> None:
        self.book.hold("q", "h1", 0.0)
        self.book.finish("h1", "retry")
        taken = self.book.take_finishes()
        self.book.give_back([*taken, Batch("extend", "q", ("h9",))])
        assert self.book.has_finishes()
        assert self.book.take_finishes() == taken

    def test_a_failed_renewal_is_postponed_and_a_lost_lease_forgotten(self) -> None:
        self.book.hold("q", "h1", 0.0)
        self.book.hold("q", "h2", 0.0)
        self.book.postpone(["h1"], until=7.0)
        self.book.forget(["h2"])
        assert self.book.next_renewal() == 7.0 and self.book.held_count == 1


class TestLeaseKeeper:
    """The keeper's rounds run by hand (`run_once`), as its thread runs them."""

    def setup_method(self) -> None:
        self.fake = FakeOkuri()
        self.fake.queues["q"] = FakeQueue("q", dict(QUEUE_DEFAULTS))
        self.client = self.fake.client()
        self.keeper: LeaseKeeper = ManualKeeper(self.client, LEASE_S, clock=self.fake.clock)

    def lease(self, count: int) -> list[str]:
        for i in range(count):
            self.fake.produce("q", f"m{i}".encode())
        items = self.client.lease("q", count, lease_s=LEASE_S)
        for item in items:
            self.keeper.hold("q", item.handle, self.fake.now)
        return [item.handle for item in items]

    def test_acks_that_arrive_together_leave_in_one_complete(self) -> None:
        handles = self.lease(3)
        for handle in handles:
            assert self.keeper.ack(handle)
        self.keeper.run_once()
        (sent,) = self.fake.seen("complete")
        assert sent.doc["handles"] == handles
        assert self.fake.live("q") == []

    def test_after_a_send_the_next_acks_wait_out_the_pace_and_leave_together(self) -> None:
        first, *rest = self.lease(4)
        self.keeper.ack(first)
        self.keeper.run_once()  # a lone ack leaves at once
        for handle in rest:
            self.keeper.ack(handle)
        self.fake.now += PACE_S / 2
        self.keeper.run_once()
        assert len(self.fake.seen("complete")) == 1  # within the pace: they wait
        with self.keeper._lock:
            assert self.keeper._idle_s(self.fake.now) == pytest.approx(PACE_S / 2)
        self.fake.now += PACE_S / 2
        self.keeper.run_once()
        assert [c.doc["handles"] for c in self.fake.seen("complete")] == [[first], rest]

    def test_a_requeue_makes_the_item_visible_now_and_a_dead_one_moves_it(self) -> None:
        again, dead = self.lease(2)
        self.keeper.requeue(again)
        self.keeper.dead(dead)
        self.keeper.run_once()
        (visible,) = self.fake.visible("q")
        assert visible.handle == again and visible.attempts == 1
        assert [item.body for item in self.fake.live("q-dlq")] == [b"m1"]

    def test_a_held_message_is_renewed_past_its_first_lease_until_acked(self) -> None:
        (handle,) = self.lease(1)
        for _ in range(5):  # 25 s: two and a half leases
            self.fake.now += LEASE_S / 2
            self.keeper.run_once()
        assert self.fake.visible("q") == [] and len(self.fake.seen("extend")) == 5
        self.keeper.ack(handle)
        self.fake.now += LEASE_S / 2
        self.keeper.run_once()
        assert self.fake.live("q") == [] and len(self.fake.seen("extend")) == 5

    def test_nothing_is_sent_before_half_the_lease(self) -> None:
        self.lease(1)
        self.fake.now += LEASE_S / 2 - 0.1
        self.keeper.run_once()
        assert self.fake.seen("extend") == []

    def test_a_lease_lost_meanwhile_is_forgotten_with_a_warning(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        (handle,) = self.lease(1)
        self.fake.now += LEASE_S + 1  # the keeper was starved past the lease
        with caplog.at_level(logging.WARNING, "okuri_kombu.keeper"):
            self.keeper.run_once()
        assert "answered 'stale'" in caplog.text and "delivered again" in caplog.text
        assert not self.keeper.holds(handle)
        self.fake.now += LEASE_S
        self.keeper.run_once()
        assert len(self.fake.seen("extend")) == 1

    def test_a_complete_that_fails_is_sent_again_after_the_retry_pause(self) -> None:
        (handle,) = self.lease(1)
        self.fake.fail_next("complete", 400, "invalid_request")
        self.keeper.ack(handle)
        self.keeper.run_once()
        assert len(self.fake.live("q")) == 1
        self.keeper.run_once()  # within the pause: nothing
        assert len(self.fake.seen("complete")) == 1
        self.fake.now += self.keeper.retry_s
        self.keeper.run_once()
        assert self.fake.live("q") == [] and len(self.fake.seen("complete")) == 2

    def test_a_send_that_crashes_keeps_its_finishes_to_send_again(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        first, second = self.lease(2)
        self.keeper.ack(first)
        self.keeper.dead(second)
        self.fake.crash_next("complete")
        with caplog.at_level(logging.ERROR, "okuri_kombu.keeper"):
            self.keeper.run_once()
        assert "complete of 1 message(s) of 'q' failed (RuntimeError" in caplog.text
        assert [i.body for i in self.fake.live("q")] == [b"m0"]  # the dead one went
        self.fake.now += self.keeper.retry_s
        self.keeper.run_once()
        assert self.fake.live("q") == []

    def test_a_failed_renewal_is_tried_again_after_the_retry_pause(self) -> None:
        self.lease(1)
        self.fake.now += LEASE_S / 2
        self.fake.fail_next("extend", 400, "invalid_request")
        self.keeper.run_once()
        self.fake.now += self.keeper.retry_s
        self.keeper.run_once()
        assert [r.doc["lease_s"] for r in self.fake.seen("extend")] == [LEASE_S, LEASE_S]
        assert self.fake.visible("q") == []

    def test_closing_sends_what_is_owed_even_during_a_retry_pause(self) -> None:
        first, second = self.lease(2)
        self.fake.fail_next("complete", 400, "invalid_request")
        self.keeper.ack(first)
        self.keeper.run_once()
        self.keeper.requeue(second)
        self.keeper.close()
        assert [i.body for i in self.fake.live("q")] == [b"m1"]
        assert self.fake.visible("q")[0].handle == second

    def test_closing_with_finishes_okuri_refuses_warns_that_they_come_back(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        (handle,) = self.lease(1)
        self.keeper.ack(handle)
        self.fake.fail_next("complete", 400, "invalid_request")
        with caplog.at_level(logging.WARNING, "okuri_kombu.keeper"):
            self.keeper.close()
        assert "1 ack(s)/reject(s) could not be sent before closing" in caplog.text

    def test_a_forked_child_forgets_the_leases_of_its_parent(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self.lease(2)
        monkeypatch.setattr(os, "getpid", lambda: -1)
        self.keeper.hold("q", "child-handle", self.fake.now)
        assert not self.keeper.holds("item-1") and self.keeper.holds("child-handle")

    def test_the_thread_sends_an_ack_without_being_asked(self) -> None:
        sent = threading.Event()

        def answer(request: httpx.Request) -> httpx.Response:
            response = self.fake.handle(request)
            if self.fake.seen("complete"):
                sent.set()
            return response

        client = Client(BASE_URL, KEY, http=httpx.Client(transport=httpx.MockTransport(answer)))
        keeper = LeaseKeeper(client, LEASE_S)  # the real clock and the real thread
        self.fake.produce("q", b"m")
        (item,) = client.lease("q", 1)
        keeper.hold("q", item.handle, time.monotonic())
        keeper.ack(item.handle)
        try:
            assert sent.wait(10), "the keeper's thread never sent the complete"
        finally:
            keeper.close()
        assert self.fake.live("q") == []
