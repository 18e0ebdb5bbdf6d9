"""Receiving on one node: leases, the lease-ahead buffer, long-poll waiters and their discovery.

A receive leases messages in the manifest's next group commit. A consumer that loops receive,
delete, receive would then need two commits per cycle, so when a receive commits, the node also
leases a few batches more (one per receive it served in the last commit window, at most
`limits.lease_ahead_messages_max`) and serves its next receives from them. Leases taken ahead are
re-checked against a fresh manifest before they are handed out (a node with a fast clock may
have re-leased and even acked the message meanwhile), and handed back (`Release`) when unused
for the hold time.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from okuri import limits
from okuri.clock import Clock
from okuri.core.expiry import touch_interval_ms
from okuri.core.leadership import leader
from okuri.core.state import QueueState
from okuri.core.transitions import Ack, Grant, Lease, LeaseResult, Op, Release, Result
from okuri.core.views import counts, current_lease, has_visible, next_expiry_ms
from okuri.engine.ack_logs import AckLogs
from okuri.engine.manifest import Manifest
from okuri.engine.slot_log import SlotLog
from okuri.engine.tasks import Tasks
from okuri.engine.types import Delivery
from okuri.errors import QueueDoesNotExist, Unavailable

log = logging.getLogger("okuri.engine")


def _group_of(st: QueueState, grant: Grant) -> str:
    seg = st.segments.get(grant.seq)
    if seg is None or seg.groups is None or grant.idx >= len(seg.groups):
        return ""
    return seg.groups[grant.idx]


def _epoch_of(lease: tuple[int, int, int] | None) -> int:
    return lease[0] if lease is not None else 0


@dataclass(slots=True)
class _Buffered:
    grant: Grant
    visibility_ms: int
    leased_s: float


class Receiver:
    def __init__(
        self,
        clock: Clock,
        linger_ms: int,
        manifest: Manifest,
        slots: SlotLog,
        tasks: Tasks,
        dead_letter: Callable[[list[Grant]], Coroutine[Any, Any, None]],
        ack_logs: AckLogs,
    ) -> None:
        self.clock = clock
        self.ack_logs = ack_logs
        self._linger_ms = linger_ms
        self.manifest = manifest
        self.slots = slots
        self._tasks = tasks
        self._dead_letter = dead_letter
        self.buffer: list[_Buffered] = []
        # Leases asked to be taken ahead by commits still on their way: counted with the
        # buffer, or every receive in one window would lease a whole buffer ahead.
        self._asked_ahead = 0
        self.waiters = 0
        self.stopping = False  # the node is shutting down: answer what is there, wait for nothing
        self._signal = asyncio.Event()
        self._receive_calls: deque[float] = deque(maxlen=64)
        self._discovery: asyncio.Task[None] | None = None
        self._prefetch: asyncio.Task[None] | None = None
        self.hold_s = max(limits.lease_ahead_hold_ms, 2 * linger_ms + 200) / 1000
        # The last receive that leased ahead: its size and visibility timeout (a delete's
        # commit tops the buffer up for the next one, `_ride`).
        self._asked: tuple[int, int] | None = None
        self._riding_vis_ms = 0  # the visibility timeout `_ride` leased for, for `_rode`
        manifest.ride_along(self._ride, self._rode)

    def notify(self) -> None:
        """Wake every long-poller of this queue on this node."""
        self._signal.set()
        self._signal = asyncio.Event()

    def watch(self) -> asyncio.Event:
        """Count a long poll that spans lanes (okuri/engine/lanes.py) as a waiter here, so
        discovery runs for it: the event that wakes it. `unwatch` when it ends."""
        self.waiters += 1
        self._ensure_discovery()
        return self._signal

    @property
    def signal(self) -> asyncio.Event:
        """The event the next notify sets (a new manifest installed here, slots found)."""
        return self._signal

    def unwatch(self) -> None:
        self.waiters -= 1

    def holds_ahead(self) -> bool:
        """Leases taken ahead wait here for the next receive."""
        return bool(self.buffer)

    def stop_waiting(self) -> None:
        """End every long poll with what it has (usually nothing), now and from now on."""
        self.stopping = True
        self.notify()

    def reset(self) -> None:
        self.buffer.clear()

    # --- receiving ---------------------------------------------------------------------------

    async def receive(
        self, max_messages: int, visibility_s: int | None, wait_s: int | None, lease_ahead: bool
    ) -> list[Delivery]:
        st = await self.manifest.current()
        vis_ms = (st.attrs.visibility_timeout_s if visibility_s is None else visibility_s) * 1000
        wait = st.attrs.receive_wait_s if wait_s is None else wait_s
        deadline = self.clock.monotonic_s() + wait
        while True:
            signal = self._signal
            deliveries = await self._try_receive(max_messages, vis_ms, lease_ahead)
            if deliveries:
                return deliveries
            remaining = deadline - self.clock.monotonic_s()
            if remaining <= 0 or self.stopping:
                return []
            st = await self.manifest.current()
            soonest = next_expiry_ms(st, self.clock.now_ms())
            if soonest is not None:
                remaining = min(remaining, max(0.0, (soonest - self.clock.now_ms()) / 1000) + 0.001)
            if st.attrs.expires_s is not None:
                # A wait is a use: try again (and so record it, when due) at least every
                # quarter of the expiry, so a queue never expires under a waiting consumer.
                remaining = min(remaining, touch_interval_ms(st.attrs.expires_s) / 1000)
            self.waiters += 1
            self._ensure_discovery()
            try:
                await self.clock.wait_for(signal.wait(), remaining)
            except TimeoutError:
                pass
            finally:
                self.waiters -= 1

    async def _try_receive(
        self, max_messages: int, vis_ms: int, lease_ahead: bool
    ) -> list[Delivery]:
        self._receive_calls.append(self.clock.monotonic_s())
        if lease_ahead and vis_ms > 0:
            self._asked = (max_messages, vis_ms)
        self._release_stale()
        st = await self.manifest.current()
        if st.attrs.fifo:
            grants = await self._take_whole_groups(st, max_messages, vis_ms)
        else:
            grants = self._take_buffered(max_messages, vis_ms)
            if grants:
                grants = await self._still_ours(grants)
        # A FIFO receive that leases ahead groups fills up from the manifest too: a group made
        # visible since (a head given back) goes out with them, as on SQS.
        if not grants or (st.attrs.fifo and len(grants) < max_messages):
            await self._discover_for(max_messages)
            log_id = self._ack_log_for(self.manifest.state or st)
            ops: list[Op] = [Lease(max_messages - len(grants), vis_ms, log_id)]
            # FIFO: at least a full receive's worth, so that the next receive finds whole
            # groups waiting rather than a group's head alone.
            target = self._lease_ahead_target(max_messages)
            if st.attrs.fifo:
                target = max(target, limits.receive_messages_max)
            extra = target - len(self.buffer) - self._asked_ahead
            if extra > 0 and vis_ms > 0 and lease_ahead:
                ops.append(Lease(extra, vis_ms + int(self.hold_s * 1000), log_id))
            else:
                extra = 0
            self._asked_ahead += extra
            try:
                results = await self._commit_lease(st.incarnation, log_id, ops)
            finally:
                self._asked_ahead -= extra
            first = results[0]
            assert isinstance(first, LeaseResult)
            grants += first.granted
            dead = list(first.dead)
            leased = list(first.granted)  # under `log_id`, when there is one
            if len(results) > 1:
                ahead = results[1]
                assert isinstance(ahead, LeaseResult)
                now_s = self.clock.monotonic_s()
                self.buffer.extend(_Buffered(g, vis_ms, now_s) for g in ahead.granted)
                if ahead.granted:
                    self._tasks.spawn(self._release_later())
                dead.extend(ahead.dead)
                leased.extend(ahead.granted)
            if log_id:
                self.ack_logs.granted(log_id, leased)
            if dead:
                # Moved before this receive answers, so the dead-letter queue has it at once.
                await self._dead_letter(dead)
        return await self.slots.deliveries(await self.manifest.current(), grants)

    async def _commit_lease(self, inc: str, log_id: str, ops: list[Op]) -> list[Result]:
        if not log_id:
            return await self.manifest.commit(ops)
        # Its object is made beside the commit, before any receipt under it leaves.
        opened = self._tasks.spawn(self.ack_logs.open(inc, log_id))
        try:
            return await self.manifest.commit(ops)
        except BaseException:
            self.ack_logs.granted(log_id, [])  # maybe committed: no receipts under it
            raise
        finally:
            await opened

    async def _discover_for(self, max_messages: int) -> None:
        """Make sure the commit that leases `max_messages` can adopt them from the slot log.

        The receive waits only for its own messages, so one right after a send through this
        node (whose segment is known here) costs no GET at all. Reading further ahead, for the
        receives that follow (`limits.discover_ahead_batches`), goes on in the background.
        """
        st = await self.manifest.current()
        if st.attrs.fifo:
            # Adopting needs the deduplication window's ids; loading, the next slots' groups.
            await self.slots.fifo.catch_up(st, max_messages + limits.adopt_margin_messages)
        visible = counts(st, self.clock.now_ms()).visible
        if max_messages > visible:
            await self.slots.discover(max_messages - visible, paced=True)
        self._read_ahead(limits.discover_ahead_batches * max_messages - visible)

    def _read_ahead(self, want_messages: int) -> None:
        """Read slots ahead in the background, one such task at a time."""
        if want_messages > 0 and (self._prefetch is None or self._prefetch.done()):
            self._prefetch = self._tasks.spawn(self._discover_quietly(want_messages))

    async def _discover_quietly(self, want_messages: int) -> None:
        try:
            await self.slots.discover(want_messages, paced=True)
        except (QueueDoesNotExist, Unavailable) as err:
            log.debug("reading ahead in %s failed: %s", self.manifest.name, err)

    def _lease_ahead_target(self, max_messages: int) -> int:
        """Enough for every receive this node served within about one commit window.

        Each consumer then finds its next batch waiting after its delete commits, so one CAS
        carries every consumer's acks instead of alternating between them.
        """
        now = self.clock.monotonic_s()
        window = self._linger_ms / 1000 + 0.1
        recent = sum(1 for t in self._receive_calls if now - t <= window)
        return min(limits.lease_ahead_messages_max, max_messages * max(1, recent))

    def _ride(self, ops: Sequence[Op]) -> list[Op]:
        """Leases ahead for a commit carrying deletes (this node's own commit, not forwarded).

        A consumer loops receive, delete, receive: taken in its delete's commit, its next batch
        waits here when that receive comes, which then makes only the re-check read
        (`_still_ours`) rather than a commit of its own. Only while receives keep coming
        (one within the last window), on a standard queue (FIFO hands out whole groups), and
        never beside a receive's own leases (it tops the buffer up itself).
        """
        st = self.manifest.state
        if self._asked is None or st is None or st.attrs.fifo:
            return []
        if not any(isinstance(op, Ack) for op in ops) or any(isinstance(op, Lease) for op in ops):
            return []
        if not self._receive_calls:
            return []
        window_s = self._linger_ms / 1000 + 0.1
        if self.clock.monotonic_s() - self._receive_calls[-1] > window_s:
            return []
        max_messages, vis_ms = self._asked
        visible = counts(st, self.clock.now_ms()).visible
        if visible < max_messages:
            # A trickle: a batch taken now would be a small one, and the receive's own commit,
            # later, takes what has come meanwhile (fewer turns, so fewer commits, a message).
            return []
        target = self._lease_ahead_target(max_messages)
        # No receive's discovery runs while receives are served from the buffer: read ahead
        # here, so the commits that follow find slots to adopt.
        self._read_ahead(target + limits.discover_ahead_batches * max_messages - visible)
        extra = target - len(self.buffer) - self._asked_ahead
        if extra <= 0:
            return []
        self._riding_vis_ms = vis_ms
        return [Lease(extra, vis_ms + int(self.hold_s * 1000))]

    def _rode(self, results: list[Result]) -> None:
        """Buffer what `_ride`'s leases granted; move what they found past maxReceiveCount."""
        (ahead,) = results
        assert isinstance(ahead, LeaseResult)
        if ahead.granted:
            now_s = self.clock.monotonic_s()
            vis_ms = self._riding_vis_ms
            self.buffer.extend(_Buffered(g, vis_ms, now_s) for g in ahead.granted)
            self._tasks.spawn(self._release_later())
            self.notify()  # a long poll waiting here can take them
        if ahead.dead:
            self._tasks.spawn(self._dead_letter(list(ahead.dead)))

    def _take_buffered(self, max_messages: int, vis_ms: int) -> list[Grant]:
        taken: list[Grant] = []
        keep: list[_Buffered] = []
        for item in self.buffer:
            if len(taken) < max_messages and item.visibility_ms == vis_ms:
                taken.append(item.grant)
            else:
                keep.append(item)
        self.buffer = keep
        return taken

    async def _take_whole_groups(
        self, st: QueueState, max_messages: int, vis_ms: int
    ) -> list[Grant]:
        """FIFO: hand out leases taken ahead a whole group at a time, so no group's messages
        are ever split between two receives; a group longer than the receive is cut, and its
        tail handed back (it stays behind the part handed out, which holds the group)."""
        groups: dict[str, list[_Buffered]] = {}
        keep: list[_Buffered] = []
        for item in self.buffer:
            if item.visibility_ms == vis_ms:
                groups.setdefault(_group_of(st, item.grant), []).append(item)
            else:
                keep.append(item)
        taken: list[_Buffered] = []
        back: list[_Buffered] = []
        for items in groups.values():
            room = max_messages - len(taken)
            if len(items) <= room:
                taken.extend(items)
            elif not taken:
                taken.extend(items[:room])
                back.extend(items[room:])
            else:
                keep.extend(items)
        self.buffer = keep
        if not taken:
            return []
        kept = await self._still_ours([b.grant for b in taken])
        if len(kept) < len(taken):
            # A lease lost meanwhile (another node judged it run out): none of its group may
            # go out now, or the group's order could break; the rest of the group goes back.
            broken = {_group_of(st, b.grant) for b in taken if b.grant not in kept}
            back.extend(b for b in taken if b.grant in kept and _group_of(st, b.grant) in broken)
            kept = [g for g in kept if _group_of(st, g) not in broken]
        if back:
            self._tasks.spawn(self._release(back))
        return kept

    def _ack_log_for(self, st: QueueState) -> str:
        """A fresh ack log for a lease this node forwards (another node leads), so that the
        deletes of what it grants can be answered here; "" for none. Not for a lease that
        will likely find nothing (a long poll on an empty queue): its log would be two
        writes for nothing."""
        if not self.ack_logs.enabled or st.attrs.fifo:
            return ""
        now = self.clock.now_ms()
        lead = leader(st, now)
        if lead is None or lead[0] == self.manifest.node_id:
            return ""
        if not has_visible(st, now) and self.slots.known_end() <= st.next_seq:
            return ""
        return self.ack_logs.new_log()

    async def _still_ours(self, grants: list[Grant]) -> list[Grant]:
        """Re-check leases taken ahead against the bucket before handing them out.

        A node with a fast clock may have judged one expired, re-leased and even acked the
        message since; handing out our older lease now would deliver it after its ack.
        """
        st = await self.manifest.refresh()
        return [g for g in grants if _epoch_of(current_lease(st, g.seq, g.idx)) == g.epoch]

    def held_ahead(self, st: QueueState, now_ms: int) -> int:
        """How many messages `st` shows in flight only because this node leased them ahead for
        its next receives: no consumer has them, so a count shows them visible."""
        return len(self.held_places(st, now_ms))

    def held_places(self, st: QueueState, now_ms: int) -> set[tuple[int, int]]:
        """(slot, index) of each message `held_ahead` counts."""
        held: set[tuple[int, int]] = set()
        for b in self.buffer:
            lease = current_lease(st, b.grant.seq, b.grant.idx)
            if lease is not None and lease[0] == b.grant.epoch and lease[1] > now_ms:
                held.add((b.grant.seq, b.grant.idx))
        return held

    # --- handing leases back -----------------------------------------------------------------

    async def _release_later(self) -> None:
        """Hand unused leases back soon, so other nodes are not kept from those messages."""
        await self.clock.sleep(self.hold_s + 0.001)
        self._release_stale()

    def _release_stale(self) -> None:
        if not self.buffer:
            return
        cutoff = self.clock.monotonic_s() - self.hold_s
        stale = [b for b in self.buffer if b.leased_s <= cutoff]
        if stale:
            self.buffer = [b for b in self.buffer if b.leased_s > cutoff]
            self._tasks.spawn(self._release(stale))

    async def release_all(self) -> None:
        stale, self.buffer = self.buffer, []
        if stale:
            await self._release(stale)

    async def _release(self, items: list[_Buffered]) -> None:
        self.ack_logs.released([b.grant for b in items])
        st = self.manifest.state
        inc = st.incarnation if st is not None else ""
        ops: list[Op] = [
            Release(b.grant.seq, b.grant.idx, b.grant.epoch, inc, b.grant.until_ms) for b in items
        ]
        try:
            await self.manifest.commit(ops)
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning("releasing leases of %s failed: %s", self.manifest.name, err)

    # --- discovery while clients wait --------------------------------------------------------

    def _ensure_discovery(self) -> None:
        if self._discovery is None or self._discovery.done():
            self._discovery = asyncio.create_task(self._discover())

    async def _discover(self) -> None:
        """While someone long-polls here, look for slots written through other nodes, as often
        as the slot log's pacing allows (every 50 ms while slots keep coming, backing off to
        once a second on a quiet log)."""
        while self.waiters > 0:
            try:
                await self.slots.discover(limits.receive_messages_max * 4, paced=True)
                if self.manifest.age_s() >= limits.manifest_refresh_ms / 1000:
                    await self.manifest.refresh()  # visibility changes made on other nodes
            except (QueueDoesNotExist, Unavailable):
                self.notify()
                return
            await self.clock.sleep(max(limits.poll_ms_min / 1000, self.slots.next_probe_in_s()))

    def close(self) -> None:
        if self._discovery is not None:
            self._discovery.cancel()
