"""Ack logs in the pure manifest: what a lease under a log records, and why nothing under an
open log is leased again until a commit closes it (okuri/engine/ack_logs.py has the objects)."""

from __future__ import annotations

import orjson

from okuri.core.ack_log_rules import due_logs
from okuri.core.state import decode_state, encode_state
from okuri.core.transitions import Ack, CloseLog, Lease, LeaseResult, Release
from tests.unit.test_core_transitions import T0, VIS, adopt, at, fresh, step


def _leased_under(log: str, n: int = 3) -> tuple[object, LeaseResult]:
    st = adopt(fresh(), 4)
    out = step(st, T0, Lease(n, VIS, log))
    res = out.results[0]
    assert isinstance(res, LeaseResult)
    return out.state, res


def test_a_lease_under_a_log_records_what_it_granted_and_survives_the_codec() -> None:
    st, res = _leased_under("f-1")
    assert at(res.granted) == [(0, 0), (0, 1), (0, 2)]
    assert st.logs == {"f-1": {(0, 0), (0, 1), (0, 2)}}  # type: ignore[attr-defined]
    assert decode_state(encode_state(st)).logs == st.logs  # type: ignore[arg-type, attr-defined]
    # A node that knows no ack logs refuses such a manifest (format 2) rather than drop them.
    assert orjson.loads(encode_state(st))["f"] == 2  # type: ignore[arg-type]
    assert b'"logs"' not in encode_state(fresh())  # absent while no log is open
    assert orjson.loads(encode_state(fresh()))["f"] == 1


def test_a_message_under_an_open_log_is_not_leased_again_until_the_log_is_closed() -> None:
    st, _ = _leased_under("f-1")
    late = T0 + VIS + 1  # every lease has run out
    assert due_logs(st, T0) == [] and due_logs(st, late) == ["f-1"]  # type: ignore[arg-type]
    out = step(st, late, Lease(10, VIS))  # type: ignore[arg-type]
    assert at(out.results[0].granted) == [(0, 3)]  # type: ignore[union-attr]
    # The committer that closes the log applies its acks first, in the same commit.
    out = step(st, late, Ack(0, 1, 1), CloseLog("f-1"), Lease(10, VIS))  # type: ignore[arg-type]
    assert out.results[:2] == ["acked", True]
    # Those given back go out again in send order, beside the one never received.
    assert at(out.results[2].granted) == [(0, 0), (0, 2), (0, 3)]  # type: ignore[union-attr]
    assert out.state.logs == {}


def test_a_release_takes_its_message_out_of_the_log_and_finished_ones_leave_it() -> None:
    st, _ = _leased_under("f-1")
    out = step(st, T0, Release(0, 0, 1))  # type: ignore[arg-type]
    assert out.state.logs == {"f-1": {(0, 1), (0, 2)}}
    assert at(step(out.state, T0, Lease(10, VIS)).results[0].granted) == [(0, 0), (0, 3)]  # type: ignore[union-attr]
    out = step(out.state, T0, Ack(0, 1, 1), Ack(0, 2, 1))
    assert out.state.logs == {}  # nothing left it could hold: the log is done with
    assert due_logs(out.state, T0 + VIS + 1) == []


def test_closing_a_log_the_manifest_no_longer_lists_changes_nothing() -> None:
    st = adopt(fresh(), 1)
    out = step(st, T0, CloseLog("gone"))
    assert out.results == [True] and not out.changed
