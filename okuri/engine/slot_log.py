"""A queue's slot log on one node: appending segments, and discovering what other nodes appended.

Sends never touch the manifest: a linger window's messages become one immutable segment, written
create-only into the next free slot. Slots at or above the manifest's cursor are dense, so a
node finds slots written through other nodes by reading forward from the cursor. It reads them
in galloping rounds of parallel GETs (1, 2, 4, ... slots at once, back to one after an empty
slot), so discovery keeps up with any number of producer nodes at one round trip per round,
while an idle queue costs one GET per probe. Only as many slots are read, and adopted into the
manifest, as consumers are about to need: depth costs neither memory nor commit time.

A slot below the cursor may have been freed and could be refilled by a producer whose idea of
the head is stale; the producer therefore re-reads the manifest after each write and writes
again if its slot was never read (`_verify_slot`). Which segment a slot held is remembered only
for the latest `manifest_recent_slots` slots. A slot older than that may hold our segment, read
and even deleted already, and writing it again would deliver it after its delete was answered;
so the send fails instead (the caller retries, as after any unclear answer), and a producer picks
its slot from a manifest recent enough that this stays rare (`okuri.engine.cursor_pace`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.lane_ops import partition_of_queue
from okuri.core.message import (
    Message,
    Segment,
    SegmentCorrupt,
    decode_segment,
    encode_segment,
    sequence_number,
)
from okuri.core.receipts import Receipt
from okuri.core.state import QueueState
from okuri.core.transitions import Adopt, Grant, Lease, Op, Reach
from okuri.core.views import adoption_room, counts
from okuri.engine.batching import Batcher
from okuri.engine.cache import SegmentCache
from okuri.engine.cursor_pace import CursorPace
from okuri.engine.fifo_slots import FifoSlots
from okuri.engine.freed_slots import FreedSlots
from okuri.engine.manifest import Manifest
from okuri.engine.retry import Backoff, retrying
from okuri.engine.tasks import Tasks
from okuri.engine.types import Delivery
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    PreconditionFailed,
    Transient,
    Unavailable,
)
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")

# How far behind a producer's cached cursor may be before it reads the manifest to pick a slot:
# a quarter of what the manifest remembers, so a slot check rarely finds its slot forgotten.
_LAG_SLOTS_MAX = limits.manifest_recent_slots / 4


class SlotLog:
    def __init__(
        self,
        name: str,
        store: ObjectStore,
        clock: Clock,
        cache: SegmentCache,
        stats: Counter[str],
        linger_ms: int,
        manifest: Manifest,
        tasks: Tasks,
        notify: Callable[[], None],
    ) -> None:
        self.name = name
        self.partition = partition_of_queue(name)  # numbers its FIFO messages (okuri.core.message)
        self.store = store
        self.clock = clock
        self.cache = cache
        self._stats = stats
        self.manifest = manifest
        self._tasks = tasks
        self._notify = notify
        self.head_hint = 0  # no free slot below this one (as far as this node knows)
        # Only this node writes this log (a lane it opened, okuri/engine/lanes.py): past
        # `head_hint` lies nothing it was not told of, so discovery reads no slot there. Off
        # for good once a write fails, which may have left a segment this node never learnt of.
        self.sole_writer = False
        # Told when another node's segment took the slot this node's producer picked: the
        # queue's lanes (okuri/engine/lanes.py) give this node a slot log of its own.
        self.contended: Callable[[], None] = lambda: None
        self.pace = CursorPace()
        # Slots at or above the cursor read (or written) here and not yet adopted; bounded by
        # what consumers asked for, since adoption takes them from the cursor up.
        self.known: dict[int, Segment] = {}
        # Slots past the cursor that nodes forwarding their commits here know (and this one
        # has not read): enough to adopt them, not to deliver them.
        self.hinted: dict[int, Adopt] = {}
        self._width = 1  # slots read at once in the next discovery round
        self.last_probe_s = -1e18
        self.last_probe_ended = False  # the last read round met an empty slot
        self._probing: asyncio.Future[None] | None = None  # a probe in flight
        # How long a probe that met the end of the log stands for the next: the minimum while
        # slots came within the last `poll_ms_max`, then doubled by each probe that finds none.
        # Kept across receives, so a consumer repeating short polls on a quiet queue costs at
        # most one GET a second here.
        self.poll_ms = limits.poll_ms_min
        self.last_found_s = -1e18
        self.fifo = FifoSlots(name, clock, cache, self.known, self.read_slot)  # FIFO queues only
        self.freed_slots = FreedSlots(clock, self.delete_quietly)
        # Each message with the moment it arrived here (monotonic): what the slot check of its
        # segment compares with when the manifest was last shown current (`_write`).
        self.producer: Batcher[tuple[Message, float], tuple[int, int]] = Batcher(
            clock,
            linger_ms,
            self._flush,
            max_items=limits.segment_messages_max,
            size=lambda item: len(item[0].body) + 512,
            max_size=limits.segment_bytes_max,
            gather_ms=limits.flush_gather_ms,
        )

    # --- following the manifest --------------------------------------------------------------

    def reset(self) -> None:
        """A new incarnation (or none): nothing known about the old one applies."""
        self.known.clear()
        self.hinted.clear()
        self.head_hint = 0
        self.pace = CursorPace()
        self.fifo.reset()

    def installed(self, st: QueueState) -> None:
        self.head_hint = max(self.head_hint, st.next_seq)
        self.pace.saw(self.clock.monotonic_s(), st.next_seq)
        for seq in [s for s in self.known if s < st.next_seq]:
            del self.known[seq]
        for seq in [s for s in self.hinted if s < st.next_seq]:
            del self.hinted[seq]

    def known_end(self) -> int:
        """One past the last slot this node knows to be written."""
        last = max(max(self.known, default=-1), max(self.hinted, default=-1))
        return max(self.head_hint, last + 1)

    def hints(self, st: QueueState) -> list[Adopt]:
        """The unbroken run of slots this node knows from the cursor of `st`, as the Adopt
        operations a leader would make of them (it commits this node's leases)."""
        out: list[Adopt] = []
        seq = st.next_seq
        while len(out) < limits.probe_segments_max:
            adopt = self._adoptable(seq)
            if adopt is None:
                break
            out.append(adopt)
            seq += 1
        return out

    def take_hints(self, st: QueueState, slots: Sequence[Adopt]) -> None:
        """Slots a follower knows past the cursor: adopted here without reading them. Slots at
        or past the cursor are never rewritten, so what any node read there stays true."""
        for adopt in slots:
            if adopt.seq >= st.next_seq and adopt.seq not in self.known:
                self.hinted.setdefault(adopt.seq, adopt)

    def _adoptable(self, seq: int) -> Adopt | None:
        seg = self.known.get(seq)
        if seg is not None:
            return Adopt(seq, seg.sid, len(seg.messages), seg.sent_ms, seg.delays())
        return self.hinted.get(seq)

    # --- appending ---------------------------------------------------------------------------

    def append(self, message: Message) -> asyncio.Future[tuple[int, int]]:
        """The (slot, index) `message` landed at, once its segment is durable and will be read."""
        return self.producer.submit((message, self.clock.monotonic_s()))

    async def _flush(self, items: list[tuple[Message, float]]) -> list[tuple[int, int]]:
        messages = [m for m, _ in items]
        segment = Segment(self.clock.new_id(), tuple(messages))
        arrived_s = min(at for _, at in items)
        try:
            slot = await self._write(segment, encode_segment(segment), arrived_s)
        except BaseException:
            self.sole_writer = False
            raise
        self._stats["segments_written"] += 1
        self._stats["segment_messages"] += len(messages)
        return [(slot, i) for i in range(len(messages))]

    async def _write(self, segment: Segment, data: bytes, arrived_s: float) -> int:
        """Write the segment into a slot that will be read; its slot once that is sure.

        `arrived_s`: when its first message arrived. The queue must be shown to exist, in this
        incarnation, by a read sent after that (a send that began after the queue was deleted,
        or deleted and created again, would otherwise land where no one reads): the pick's
        own manifest when it was shown current since, else a read sent beside the write, which
        costs a GET but no wait of its own."""
        st = await self.manifest.current()
        age_s = self.manifest.age_s()
        if age_s > limits.slot_pick_fresh_s or self.pace.behind(age_s) > _LAG_SLOTS_MAX:
            st = await self.manifest.refresh()  # a stale cursor leads into freed slots
            age_s = self.manifest.age_s()
        picked_s = self.clock.monotonic_s() - age_s  # when the cursor we pick from was current
        slot = max(self.head_hint, st.next_seq)
        alive: asyncio.Future[QueueState] | None = None
        if picked_s < arrived_s:
            alive = asyncio.ensure_future(self.manifest.refresh())
            self._stats["slot_checks_beside"] += 1
            await self.clock.sleep(0)  # the read leaves first, sent after the send came
        try:
            return await self._write_checked(segment, data, st, slot, picked_s, alive)
        finally:
            if alive is not None and not alive.cancel() and not alive.cancelled():
                alive.exception()  # done already: seen, whether awaited or not

    async def _write_checked(
        self,
        segment: Segment,
        data: bytes,
        st: QueueState,
        slot: int,
        picked_s: float,
        alive: asyncio.Future[QueueState] | None,
    ) -> int:
        unsure = -1  # a slot our write may have reached though its reply said otherwise
        failing = Backoff(self.clock)
        for _ in range(limits.put_attempts_max):
            inc = st.incarnation
            key = keys.segment(self.name, inc, slot)
            try:
                await self.store.put_if_absent(key, data)
            except PreconditionFailed:
                # Taken; after an unclear attempt on this very slot, maybe by our own write,
                # which must not be written a second time elsewhere.
                if slot != unsure or not await self._slot_holds(inc, slot, segment.sid):
                    self.contended()
                    slot = await self.find_head(inc, slot + 1)
                    continue
            except Transient:
                await failing.failed()
                continue
            except (Ambiguous, Conflict):
                # A lost reply, or a racing create (409): the slot may hold ours, another's, or
                # nothing. Skipping an empty slot would leave a gap that hides every later one.
                mine = await self._slot_holds(inc, slot, segment.sid)
                if mine is None:
                    unsure = slot
                    await failing.failed()
                    continue
                if not mine:
                    slot = await self.find_head(inc, slot + 1)
                    continue
            if alive is not None:
                await alive  # the queue outlived the send's start, or the send fails
                alive = None
            verdict = await self._verify_slot(slot, segment.sid, picked_s)
            st = await self.manifest.current()
            if verdict is None and st.incarnation == inc:
                self._stats["slot_checks_unsure"] += 1
                raise Unavailable(
                    f"a send to {self.name!r} may or may not have been stored: too many slots"
                    " were read while it was checked (retry it)"
                )
            if verdict and st.incarnation == inc:
                self.head_hint = max(self.head_hint, slot + 1)
                if slot - st.next_seq < limits.probe_segments_max:
                    # Near the cursor, so soon read here; deep in a backlog it would only
                    # push out what consumers need next.
                    self.cache.put((self.name, inc, slot), segment)
                self._notify()
                return slot
            slot = max(st.next_seq, self.head_hint)
            picked_s = self.clock.monotonic_s() - self.manifest.age_s()
        raise Unavailable(f"could not append to {self.name!r}: too much contention")

    async def _slot_holds(self, inc: str, slot: int, sid: str) -> bool | None:
        """Whose segment is in a slot after an ambiguous write: ours, another's, or none."""
        seg = await self.read_slot(inc, slot)
        return None if seg is None else seg.sid == sid

    async def _verify_slot(self, slot: int, sid: str, picked_s: float) -> bool | None:
        """Was our freshly written slot (or will it be) read? False: it was a stale, freed slot
        no one will read. None: the manifest no longer remembers which segment was read there,
        so writing it again could deliver what was read and deleted already.

        No read is needed when the cursor the slot was picked from (at or below it) was shown
        current less than half a freed slot's keep ago: for the slot to be below the cursor
        now, a segment must have filled it, been read, finished and deleted since, and that
        delete waits the whole keep (`okuri/engine/freed_slots.py`)."""
        if self.clock.monotonic_s() - picked_s < limits.freed_slot_keep_s / 2:
            self._stats["slot_checks_skipped"] += 1
            return True
        st = await self.manifest.refresh()  # always a fresh read; never judged from the cache
        if slot >= st.next_seq:
            return True
        read = st.recent_sid(slot)
        if read is None and slot in st.segments:
            read = st.segments[slot].sid
        return None if read is None else read == sid

    async def find_head(self, inc: str, start: int) -> int:
        """The first empty slot at or after `start`, by galloping then bisecting over GETs."""
        lo, step = start, 1
        while await self.read_slot(inc, lo + step - 1) is not None:
            lo, step = lo + step, min(step * 2, 1 << 20)
        hi = lo + step - 1  # empty
        while lo < hi:
            mid = (lo + hi) // 2
            if await self.read_slot(inc, mid) is not None:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # --- reading -----------------------------------------------------------------------------

    async def read_slot(self, inc: str, seq: int) -> Segment | None:
        cache_key = (self.name, inc, seq)
        seg = self.cache.get(cache_key)
        if seg is not None:
            return seg
        try:
            blob = await retrying(
                self.clock, lambda: self.store.get(keys.segment(self.name, inc, seq))
            )
        except NotFound:
            return None
        try:
            seg = decode_segment(blob.data)
        except SegmentCorrupt:
            # Not written by okuri: adopt it as an empty slot so the log moves on past it.
            log.error("slot %d of %s holds a foreign object; stepping over it", seq, self.name)
            seg = Segment(f"foreign:{blob.etag}", ())
        self.cache.put(cache_key, seg)
        return seg

    async def segment_for(self, st: QueueState, seq: int) -> Segment | None:
        """The adopted segment in slot `seq`, or None if it was finished or purged since."""
        meta = st.segments.get(seq)
        if meta is None:
            return None
        seg = await self.read_slot(st.incarnation, seq)
        if seg is not None and seg.sid != meta.sid:
            self.cache.drop((self.name, st.incarnation, seq))
            seg = await self.read_slot(st.incarnation, seq)
            if seg is None or seg.sid != meta.sid:
                return None
        return seg

    async def deliveries(self, st: QueueState, grants: Sequence[Grant]) -> list[Delivery]:
        """The messages `grants` leased, with their receipts (those gone since are skipped)."""
        out: list[Delivery] = []
        for g in grants:
            seg = await self.segment_for(st, g.seq)
            if seg is None or g.idx >= len(seg.messages):
                continue
            receipt = Receipt(self.name, st.incarnation, g.seq, g.idx, g.epoch)
            number = sequence_number(g.seq, g.idx, self.partition) if st.attrs.fifo else None
            m = seg.messages[g.idx]
            count = m.receives_before + g.epoch
            out.append(Delivery(m, receipt.encode(), count, g.first_receive_ms, number))
        return out

    # --- discovery ---------------------------------------------------------------------------

    def _known_run(self, st: QueueState) -> tuple[int, int, int]:
        """(first slot not known past the cursor, messages known in the run up to it, slots
        that joined the run just now from the segment cache, without a request)."""
        head, have, joined = st.next_seq, 0, 0
        while head < st.next_seq + limits.probe_segments_max:
            hint = self.hinted.get(head)
            if hint is not None:
                have += hint.count
                head += 1
                continue
            seg = self.known.get(head)
            if seg is None:
                seg = self.cache.get((self.name, st.incarnation, head))
                if seg is None:
                    break
                self.known[head] = seg
                joined += 1
            have += len(seg.messages)
            head += 1
        return head, have, joined

    async def discover(self, want_messages: int, paced: bool = False) -> int:
        """Know an unbroken run of slots from the cursor holding `want_messages`, reading slots
        until then or until an empty one; how many slots became known.

        `paced`: no read while the last one that met the end of the log still stands
        (`poll_ms`): what it found, or that it found nothing, is as good as a new read.
        """
        while True:
            st = await self.manifest.current()
            head, have, found = self._known_run(st)
            if paced and self.next_probe_in_s() > 0:
                return self._found(found)
            if not paced or self._probing is None:
                break
            # A probe is out: once it meets the end of the log, its answer is as new as ours
            # would be (thirty consumers each reading the same empty slot cost thirty GETs
            # for one answer); had it less to find than we have, we read on after it.
            await asyncio.wait({self._probing})
        if self._probing is not None:  # unpaced: read for ourselves, beside the probe out
            return await self._probe(st.incarnation, head, have, found, want_messages)
        probing = self._probing = asyncio.get_running_loop().create_future()
        try:
            return await self._probe(st.incarnation, head, have, found, want_messages)
        finally:
            probing.set_result(None)
            self._probing = None

    async def _probe(self, inc: str, head: int, have: int, found: int, want_messages: int) -> int:
        """`discover`'s reads: rounds of slots read at once from `head`, each as wide as the
        last round found, until `want_messages` are known or a slot is empty."""
        self.last_probe_s = self.clock.monotonic_s()
        reads, ended, new = 0, False, 0
        while have < max(want_messages, 1) and reads < limits.probe_segments_max:
            width = min(self._width, limits.probe_segments_max - reads)
            if self.sole_writer:
                width = min(width, self.head_hint - head)
                if width <= 0:  # the end of what this node wrote: the end of the log
                    ended = True
                    break
            segs = await asyncio.gather(*(self.read_slot(inc, head + i) for i in range(width)))
            reads += width
            got = 0
            for seg in segs:
                if seg is None:
                    break
                self.known[head] = seg
                have += len(seg.messages)
                head += 1
                got += 1
            new += got
            self._stats["discovery_rounds"] += 1
            if got < width:
                self._width = max(1, got)
                ended = True
                break
            self._width = min(self._width * 2, limits.probe_parallel_max)
        self.last_probe_ended = ended
        now = self.clock.monotonic_s()
        if new or not ended:
            self.last_found_s = now
        if now - self.last_found_s < limits.poll_ms_max / 1000:
            self.poll_ms = limits.poll_ms_min
        else:
            self.poll_ms = min(self.poll_ms * 2, limits.poll_ms_max)
        return self._found(found + new)

    def next_probe_in_s(self) -> float:
        """How long the last probe's answer still stands (0: probe now)."""
        if not self.last_probe_ended:
            return 0.0
        due = self.last_probe_s + self.poll_ms / 1000
        return max(0.0, due - self.clock.monotonic_s())

    def _found(self, found: int) -> int:
        if found:
            self._stats["slots_discovered"] += found
            self._notify()
        return found

    def adopt_ops(self, st: QueueState, ops: Sequence[Op]) -> list[Op]:
        """Adopt known slots from the cursor up, only while the manifest has fewer visible
        messages than `ops` will lease (and a margin), or up to a slot a FIFO send waits on:
        a deep backlog stays in its segments. A FIFO queue's adoption is `FifoSlots.adopt_ops`."""
        wanted = wanted_messages(ops)
        reach = max((op.seq for op in ops if isinstance(op, Reach)), default=-1)
        if not wanted and reach < st.next_seq:
            return []
        if st.attrs.fifo:
            return self.fifo.adopt_ops(st, wanted, reach)
        visible = counts(st, self.clock.now_ms()).visible
        room = adoption_room(st)
        adopts: list[Op] = []
        seq = st.next_seq
        while (visible < wanted or seq <= reach) and len(adopts) < room:
            adopt = self._adoptable(seq)
            if adopt is None:
                break
            adopts.append(adopt)
            visible += adopt.count - len(adopt.delays)
            seq += 1
        return adopts

    async def reach(self, seq: int) -> None:
        """Know every slot from the cursor up to `seq`, so one commit can adopt them all."""
        for _ in range(limits.reach_rounds_max):
            st = await self.manifest.current()
            if self._known_run(st)[0] > seq or seq < st.next_seq:
                return
            if not await self.discover(limits.receive_messages_max * limits.probe_segments_max):
                return

    # --- lifecycle ---------------------------------------------------------------------------

    def freed(self, inc: str, seqs: Sequence[int]) -> None:
        """Slots the manifest dropped: delete their objects once the keep has passed."""
        for seq in seqs:
            self.cache.drop((self.name, inc, seq))
        self.freed_slots.delete_later(keys.segment(self.name, inc, seq) for seq in seqs)

    async def delete_quietly(self, key: str) -> None:
        try:
            await retrying(self.clock, lambda: self.store.delete(key))
        except Unavailable:
            log.warning("could not delete %s; the sweeper will", key)

    async def close(self) -> None:
        await self.producer.drain()
        self.freed_slots.stop()

    def crash(self) -> None:
        self.producer.cancel()
        self.freed_slots.stop()


def wanted_messages(ops: Sequence[Op]) -> int:
    """Messages to have adopted and visible for `ops`: what they lease, plus a margin."""
    asked = sum(op.max_messages for op in ops if isinstance(op, Lease))
    return asked + limits.adopt_margin_messages if asked else 0
