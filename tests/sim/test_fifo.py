"""FIFO queues in the simulator: which seeds run them, what their runs exercise, the FIFO
oracle on hand-made histories, and its teeth against engines broken on purpose."""

from __future__ import annotations

import pytest

from okuri.core import transitions
from okuri.core.message import Segment
from okuri.core.state import QueueState
from okuri.core.transitions import Grant
from okuri.engine.dedup import DedupIndex
from okuri.engine.leases import Receiver
from okuri.sim.config import (
    FIFO_GROUPS_CHOICES,
    FIFO_SHARE,
    STEADY_SEED_EVERY,
    STEADY_SEED_OFFSET,
    SimConfig,
)
from okuri.sim.fifo_checks import check_fifo
from okuri.sim.history import Acked, Changed, Delivered, History, Purged, Sent
from okuri.sim.runner import describe, run_seed

Q = "jobs.fifo"
DLQ = "jobs-dlq.fifo"
S1, S2, S3 = "10000000000000065536", "10000000000000131072", "10000000000000196608"


def fifo_seeds(below: int) -> list[int]:
    return [s for s in range(below) if SimConfig.from_seed(s).fifo]


# --- which seeds, and what they exercise -----------------------------------------------------


def test_a_share_of_chaos_seeds_runs_a_fifo_queue_and_steady_seeds_never_do() -> None:
    configs = [SimConfig.from_seed(s) for s in range(800)]
    fifo = [c for c in configs if c.fifo]
    assert 0.6 * FIFO_SHARE < len(fifo) / len(configs) < 1.4 * FIFO_SHARE
    assert all(not c.steady for c in fifo)
    assert all(c.groups in FIFO_GROUPS_CHOICES and c.consumers >= 2 for c in fifo)
    assert {c.groups for c in fifo} == set(FIFO_GROUPS_CHOICES)
    standard = [c for c in configs if not c.fifo]
    assert all(c.groups == 0 and c.p_resend == 0 for c in standard)
    assert not SimConfig.from_seed(STEADY_SEED_OFFSET + 2 * STEADY_SEED_EVERY).fifo


def test_fifo_seeds_split_groups_resend_dead_letter_and_crash() -> None:
    """The FIFO workload reaches what the oracle judges: duplicates answered, several messages
    of a group in one receive, heads of groups given back, deletes whose answer was lost (or
    visibility changes), dead letters in the FIFO dead-letter queue, crashes."""
    seen = {"duplicates": 0, "group_batches": 0, "given_back": 0, "dlq": 0, "crashes": 0}
    for seed in fifo_seeds(80):
        result = run_seed(seed)
        assert result.ok, describe(result)
        h = result.history
        assert {s.queue for s in h.sent} == {Q}
        assert all(s.sequence_number and len(s.sequence_number) == 20 for s in h.sent)
        seen["duplicates"] += sum(s.duplicate for s in h.sent)
        calls: dict[tuple[int, str | None], int] = {}
        for d in h.delivered:
            calls[(d.receive_id, d.group_id)] = calls.get((d.receive_id, d.group_id), 0) + 1
        seen["group_batches"] += sum(n > 1 for n in calls.values())
        seen["given_back"] += sum(c.visibility_s == 0 for c in h.changed)
        seen["dlq"] += sum(d.queue == DLQ for d in h.delivered)
        seen["crashes"] += h.crashes
    assert all(seen.values()), seen


def test_a_fifo_seed_replays_exactly() -> None:
    seed = fifo_seeds(40)[3]
    first, second = run_seed(seed), run_seed(seed)
    assert first.history.digest() == second.history.digest()
    assert first.requests == second.requests


# --- mutation tests: the oracle notices a broken engine -------------------------------------


def _first_failure(seeds: list[int]) -> set[str]:
    for seed in seeds:
        result = run_seed(seed)
        if not result.ok:
            return {v.invariant for v in result.violations}
    return set()


def test_fifo_oracle_catches_an_engine_that_forgets_groups_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mutation test: a group's hidden message no longer holds back the later ones, so a message
    goes out while an earlier one of its group is held by another receive. Some FIFO seed must
    report it (a consumer keeps a group's later messages while another polls)."""

    def runs_past_hidden(
        st: QueueState, now_ms: int, taken: set[tuple[int, int]]
    ) -> tuple[dict[str, list[tuple[int, int]]], dict[str, tuple[int, int, int]]]:
        runs: dict[str, list[tuple[int, int]]] = {}
        since: dict[str, tuple[int, int, int]] = {}
        for seg in st.segments.values():
            for idx in range(seg.count):
                until_ms = seg.leases.get(idx, (0, 0, 0))[1]
                if seg.is_done(idx) or until_ms > now_ms or (seg.seq, idx) in taken:
                    continue
                group = seg.groups[idx] if seg.groups is not None else ""
                runs.setdefault(group, []).append((seg.seq, idx))
                since.setdefault(group, (until_ms or seg.sent_ms, seg.seq, idx))
        return runs, since

    monkeypatch.setattr(transitions, "fifo_group_runs", runs_past_hidden)
    found = _first_failure(fifo_seeds(200))
    assert {"group_one_in_flight", "group_waits_for_earlier"} & found, "the oracle missed it"


def test_fifo_oracle_catches_an_engine_that_delivers_a_group_out_of_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mutation test: every message its own group, so nothing waits for anything."""

    def own_groups(self: Segment) -> tuple[str, ...]:
        return tuple(m.id for m in self.messages)

    monkeypatch.setattr(Segment, "groups", own_groups)
    assert "group_waits_for_earlier" in _first_failure(fifo_seeds(60)), "the oracle missed it"


def test_fifo_oracle_catches_an_engine_that_judges_nothing_a_duplicate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mutation test: DedupIndex.judge finds no duplicates, so a resend is a second message."""

    def no_duplicates(self: DedupIndex, segments: list[tuple[int, Segment]]) -> list[int]:
        return [0] * len(segments)

    monkeypatch.setattr(DedupIndex, "judge", no_duplicates)
    assert "dedup_one_message" in _first_failure(fifo_seeds(60)), "the oracle missed it"


def test_fifo_oracle_catches_leases_taken_ahead_handed_out_a_message_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Mutation test: a node hands out its FIFO leases taken ahead as a standard queue's, one
    message at a time, so one group's messages may go to two receives at once."""

    async def split_groups(
        self: Receiver, st: QueueState, max_messages: int, vis_ms: int
    ) -> list[Grant]:
        grants = self._take_buffered(max_messages, vis_ms)
        return await self._still_ours(grants) if grants else []

    monkeypatch.setattr(Receiver, "_take_whole_groups", split_groups)
    found = _first_failure(fifo_seeds(200))
    assert {"group_one_in_flight", "group_waits_for_earlier"} & found, "the oracle missed it"


# --- the oracle on hand-made histories -------------------------------------------------------


def _sent(mid: str, seq: str, start: float, dedup: str, attempt: int = 0, **kw: object) -> Sent:
    body = f"{dedup}-a{attempt}".encode()
    return Sent(Q, mid, body, start, start + 0.5, "g", dedup, sequence_number=seq, **kw)  # type: ignore[arg-type]


def _delivered(mid: str, seq: str, start: float, call: int, vis: float = 5.0) -> Delivered:
    body = {"m1": b"d1-a0", "m2": b"d2-a0", "m3": b"d3-a0"}[mid]
    dedup = body.decode()[:2]
    return Delivered(Q, mid, body, 1, start, start + 0.1, None, "g", seq, dedup, 0.0, call, vis)


def _history() -> History:
    """m1 and m2 in one group; m1 sent again (answered as a duplicate of m1); each delivered
    once by its own receive and deleted before the next."""
    h = History()
    h.sent += [
        _sent("m1", S1, 0.0, "d1"),
        _sent("m2", S2, 1.0, "d2"),
        _sent("m1", S1, 2.0, "d1", attempt=1, duplicate=True),
    ]
    h.first_attempt.update({"d1": 0.0, "d2": 1.0})
    h.delivered += [_delivered("m1", S1, 3.0, 1), _delivered("m2", S2, 5.0, 2)]
    h.acked += [Acked(Q, "m1", 1, "acked", 4.0, 4.1), Acked(Q, "m2", 1, "acked", 6.0, 6.1)]
    return h


def _names(h: History, skew_ms_max: int = 0) -> set[str]:
    return {v.invariant for v in check_fifo(h, Q, 4 * 86400, skew_ms_max)}


def test_fifo_oracle_passes_a_clean_history() -> None:
    assert _names(_history()) == set()


def test_fifo_oracle_reports_a_later_message_delivered_while_an_earlier_is_in_flight() -> None:
    h = _history()
    h.delivered[1] = _delivered("m2", S2, 3.5, 2)  # m1 is held until its delete at 4.0
    assert _names(h) == {"group_one_in_flight", "group_waits_for_earlier"}
    h.delivered[1] = _delivered("m2", S2, 3.0, 1)  # the same receive call may return both
    h.acked[1] = Acked(Q, "m2", 1, "acked", 4.0, 4.1)
    assert _names(h) == set()


def test_fifo_oracle_lets_a_head_given_back_go_out_again_while_the_rest_is_held() -> None:
    """As on SQS (recorded): m1 made visible again while m2, received with it, is still held
    goes out again; m2 may not go out to another receive while m1 is held."""
    h = _history()
    h.delivered[1] = _delivered("m2", S2, 3.0, 1)
    h.changed.append(Changed(Q, "m1", 1, 0, "ok", 3.2, 3.3))  # m1 given back, m2 kept
    h.delivered.append(_delivered("m1", S1, 3.5, 2))
    h.acked[:] = [Acked(Q, "m2", 1, "acked", 4.5, 4.6), Acked(Q, "m1", 1, "acked", 5.0, 5.1)]
    assert _names(h) == set()
    h.delivered.append(_delivered("m2", S2, 3.8, 3))  # m1 held by receive 2 until 5.0
    assert "group_one_in_flight" in _names(h)


def test_fifo_oracle_credits_visibility_extensions_and_allows_for_skew() -> None:
    h = _history()
    h.delivered[0] = _delivered("m1", S1, 3.0, 1, vis=1.0)
    h.changed.append(Changed(Q, "m1", 1, 10, "ok", 3.5, 3.6))  # held on until 13.5
    h.acked[0] = Acked(Q, "m1", 1, "acked", 12.0, 12.1)
    h.delivered[1] = _delivered("m2", S2, 8.0, 2)
    h.acked[1] = Acked(Q, "m2", 1, "acked", 13.0, 13.1)
    assert "group_one_in_flight" in _names(h)
    assert "group_one_in_flight" not in _names(h, skew_ms_max=3000)  # 13.5 - 6 < 8.0


def test_fifo_oracle_reports_a_group_that_skips_a_visible_earlier_message() -> None:
    h = _history()
    h.delivered[0] = _delivered("m1", S1, 3.0, 1, vis=1.0)  # its lease runs out at 4.0
    h.acked[0] = Acked(Q, "m1", 1, "acked", 6.0, 6.1)
    h.delivered[1] = _delivered("m2", S2, 5.0, 2)  # m1 is visible again: it comes first
    h.acked[1] = Acked(Q, "m2", 1, "acked", 6.0, 6.1)
    assert _names(h) == {"group_waits_for_earlier"}
    h.purged.append(Purged(Q, 4.5, 4.6, confirmed=True))  # unless a purge may have taken it
    assert _names(h) == set()


def test_fifo_oracle_reports_first_deliveries_out_of_sequence() -> None:
    h = _history()
    h.delivered[:] = [_delivered("m2", S2, 3.0, 1), _delivered("m1", S1, 5.0, 2)]
    h.acked[:] = [Acked(Q, "m2", 1, "acked", 4.0, 4.1), Acked(Q, "m1", 1, "acked", 6.0, 6.1)]
    assert {"group_order", "group_waits_for_earlier"} <= _names(h)


def test_fifo_oracle_reports_sequence_numbers_against_send_order() -> None:
    h = _history()
    h.sent[1] = _sent("m2", "9999999999999999999", 1.0, "d2")  # below m1's, sent after it
    assert "sequence_follows_sends" in _names(h)
    h = _history()
    h.sent[2] = _sent("m1", S3, 2.0, "d1", attempt=1, duplicate=True)  # a second number
    assert "sequence_follows_sends" in _names(h)


def test_fifo_oracle_reports_a_resend_enqueued_twice_or_delivered() -> None:
    h = _history()
    h.sent[2] = _sent("m3", S3, 2.0, "d1", attempt=1)  # answered as a new message
    assert _names(h) == {"dedup_one_message"}
    h = _history()  # the resend answered as a duplicate, and yet delivered as a message
    h.delivered.append(Delivered(Q, "m3", b"d1-a1", 1, 7.0, 7.1, None, "g", S3, "d1", 2.0, 3, 5))
    assert _names(h) == {"dedup_one_message", "duplicate_never_delivered"}


def test_fifo_oracle_reports_a_duplicate_answer_naming_another_message() -> None:
    h = _history()
    h.sent[2] = _sent("m2", S2, 2.0, "d1", attempt=1, duplicate=True)  # m2 carries d2
    assert "dedup_one_message" in _names(h)
