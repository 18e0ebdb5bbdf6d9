"""A body's way in (okuri.engine.intake) and what unverified bodies hold (okuri.engine.admission):
bytes are charged as they arrive, to their sender, never for what a request only declares; a
read that pauses or drags ends. Driven on the simulator's virtual loop, so the deadlines pass in
no real time; tests/surface/test_hardening.py drives a real server the same way."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

import pytest

from okuri import limits
from okuri.clock import LoopClock
from okuri.engine import Admission, Bounds, read_body, sender_of
from okuri.errors import BodyUnread, Overloaded
from okuri.server.health import admission_lines
from okuri.sim.loop import run_virtual

BODY = limits.request_bytes_max
MiB = 1024 * 1024


def CLOCK() -> LoopClock:
    return LoopClock(0, random.Random(1))


def pool(sender_bytes: int = 2 * MiB, unverified_bytes: int = 3 * MiB) -> Admission:
    """Bodies of at most 1 MiB; authenticated requests hold at most 2 MiB of them."""
    return Admission(
        Bounds(
            requests_max=10,
            bytes_max=2 * MiB,
            long_polls_max=1,
            body_bytes_max=MiB,
            unverified_bytes_max=unverified_bytes,
            sender_bytes_max=sender_bytes,
        )
    )


def chunks(*parts: bytes, pause_s: float = 0.0) -> Callable[[], Awaitable[bytes]]:
    """A reader that hands out `parts` (then b"", the end), sleeping `pause_s` before each."""
    left = list(parts)

    async def read() -> bytes:
        await asyncio.sleep(pause_s)
        return left.pop(0) if left else b""

    return read


def stalls_after(*parts: bytes) -> Callable[[], Awaitable[bytes]]:
    """A reader that hands out `parts`, then waits for ever: a client that stopped sending."""
    left = list(parts)

    async def read() -> bytes:
        if left:
            return left.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return read


def test_a_declared_body_holds_nothing_until_its_bytes_arrive() -> None:
    admission = pool()
    holdings = [admission.gate("sqs").hold_unverified("10.0.0.1") for _ in range(1000)]
    assert admission.snapshot().in_flight["unverified_bytes"] == 0
    assert holdings  # a thousand requests that declared 4 MiB each and sent nothing: nothing


def test_one_sender_past_its_share_is_refused_and_others_are_not() -> None:
    admission = pool(sender_bytes=2 * MiB, unverified_bytes=3 * MiB)
    gate = admission.gate("sqs")
    first, second = gate.hold_unverified("10.0.0.1"), gate.hold_unverified("10.0.0.1")
    first.charge(MiB)
    second.charge(MiB)
    with pytest.raises(Overloaded) as refused:
        gate.hold_unverified("10.0.0.1").charge(1)
    assert refused.value.bound == "sender_bytes"
    other = gate.hold_unverified("10.0.0.2")
    other.charge(MiB)  # another sender still gets in, up to the total
    with pytest.raises(Overloaded) as full:
        gate.hold_unverified("10.0.0.3").charge(1)
    assert full.value.bound == "unverified_bytes"
    snapshot = admission.snapshot()
    assert snapshot.in_flight["unverified_bytes"] == 3 * MiB
    assert snapshot.in_flight["sender_bytes"] == 2 * MiB
    assert snapshot.shed[("sqs", "sender_bytes")] == 1
    assert snapshot.shed[("sqs", "unverified_bytes")] == 1
    first.release()
    first.release()  # once is enough
    gate.hold_unverified("10.0.0.1").charge(MiB)
    second.release()
    other.release()
    assert admission.snapshot().in_flight["unverified_bytes"] == MiB


def test_unverified_bytes_leave_the_bounds_of_authenticated_requests_alone() -> None:
    admission = pool()
    gate = admission.gate("sqs")
    gate.hold_unverified("10.0.0.1").charge(2 * MiB)
    tickets = [gate.enter("request", MiB) for _ in range(2)]  # the whole bytes bound is there
    assert admission.snapshot().in_flight["bytes"] == 2 * MiB
    for ticket in tickets:
        ticket.release()


def test_metrics_show_unverified_bytes_and_their_bounds() -> None:
    admission = pool()
    admission.gate("sqs").hold_unverified("10.0.0.1").charge(123)
    lines = admission_lines(admission)
    assert 'okuri_inflight{kind="unverified_bytes"} 123' in lines
    assert 'okuri_inflight{kind="sender_bytes"} 123' in lines
    assert f'okuri_inflight_max{{kind="sender_bytes"}} {2 * MiB}' in lines


def test_bounds_insist_one_sender_gets_no_more_than_all_and_at_least_one_body() -> None:
    with pytest.raises(ValueError, match="one sender"):
        Bounds(unverified_bytes_max=BODY, sender_bytes_max=2 * BODY, bytes_max=BODY)
    with pytest.raises(ValueError, match="at least one body"):
        Bounds(sender_bytes_max=BODY - 1)


@pytest.mark.parametrize(
    ("address", "sender"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),  # the same host's other address
        ("fe80::1%eth0", "fe80::/64"),
        (None, ""),
        ("not-an-ip", "not-an-ip"),
    ],
)
def test_senders_are_ipv4_addresses_and_ipv6_slash_64s(address: str | None, sender: str) -> None:
    assert sender_of(address) == sender


def test_a_body_is_read_whole_and_charged_as_it_arrives() -> None:
    admission = pool()
    holding = admission.gate("sqs").hold_unverified("10.0.0.1")

    async def go() -> bytes:
        return await read_body(
            chunks(b"ab", b"cd", b"e"), None, 10, CLOCK(), 5, 60, holding
        )

    assert run_virtual(go()) == b"abcde"
    assert admission.snapshot().in_flight["unverified_bytes"] == 5
    holding.release()
    assert admission.snapshot().in_flight["unverified_bytes"] == 0


def test_a_body_that_pauses_past_the_read_timeout_ends_timed_out() -> None:
    async def go() -> float:
        clock = CLOCK()
        started = clock.monotonic_s()
        with pytest.raises(BodyUnread) as unread:
            await read_body(stalls_after(b"abc"), 100, 100, clock, 30, 300)
        assert unread.value.reason == "timed_out"
        return clock.monotonic_s() - started

    assert run_virtual(go()) == pytest.approx(30)


def test_a_body_dribbled_byte_by_byte_ends_at_its_total_deadline() -> None:
    async def go() -> float:
        clock = CLOCK()
        started = clock.monotonic_s()
        with pytest.raises(BodyUnread) as unread:
            await read_body(chunks(*[b"x"] * 1000, pause_s=10), None, 4096, clock, 30, 300)
        assert unread.value.reason == "timed_out"
        return clock.monotonic_s() - started

    assert run_virtual(go()) == pytest.approx(300)


def test_a_body_larger_than_allowed_is_refused_declared_or_not() -> None:
    async def go(declared: int | None) -> str:
        with pytest.raises(BodyUnread) as unread:
            await read_body(chunks(b"x" * 6, b"x" * 6), declared, 10, CLOCK(), 5, 60)
        return unread.value.reason

    assert run_virtual(go(11)) == "too_large"
    assert run_virtual(go(None)) == "too_large"


def test_a_client_that_goes_away_mid_body_is_incomplete_not_a_server_fault() -> None:
    async def gone() -> bytes:
        raise ConnectionResetError("Connection lost")

    async def go() -> BodyUnread:
        with pytest.raises(BodyUnread) as unread:
            await read_body(gone, 10, 10, CLOCK(), 5, 60)
        return unread.value

    err = run_virtual(go())
    assert err.reason == "incomplete"
    assert not err.retryable


def test_a_sender_past_its_share_is_refused_mid_body_and_holds_nothing_more() -> None:
    admission = pool(sender_bytes=MiB, unverified_bytes=MiB)
    gate = admission.gate("sqs")
    holding = gate.hold_unverified("10.0.0.1")
    holding.charge(MiB - 2)

    async def go() -> None:
        other = gate.hold_unverified("10.0.0.1")
        with pytest.raises(Overloaded):
            await read_body(chunks(b"a", b"bcd"), None, MiB, CLOCK(), 5, 60, other)
        other.release()

    run_virtual(go())
    holding.release()
    assert admission.snapshot().in_flight["unverified_bytes"] == 0


def test_a_body_already_here_is_read_without_a_deadline_and_one_still_coming_with_one() -> None:
    """Most bodies arrive with their headers: their reads cannot wait, so they are spared the
    deadline's timer. The proof: a read told the body is all here is not cut off even when it
    takes longer than the pause allowed (it could not, for real)."""

    async def go(arrived: int) -> bytes:
        return await read_body(
            chunks(b"abc", pause_s=10), 3, 10, CLOCK(), 5, 60, arrived=lambda: arrived
        )

    assert run_virtual(go(3)) == b"abc"
    with pytest.raises(BodyUnread):
        run_virtual(go(2))
