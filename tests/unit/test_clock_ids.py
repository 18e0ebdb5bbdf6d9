"""SystemClock.new_id: version 4 UUIDs from bulk entropy, unique, and not shared with a fork."""

from __future__ import annotations

import os
import uuid

from okuri.clock import SystemClock


def test_ids_are_canonical_version_4_uuids() -> None:
    clock = SystemClock()
    ids = [clock.new_id() for _ in range(1000)]  # spans several entropy refills
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == text


def test_a_forked_child_draws_fresh_entropy() -> None:
    clock = SystemClock()
    clock.new_id()  # the parent holds a part-used buffer
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read)
        os.write(write, "".join(clock.new_id() for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    parent = "".join(clock.new_id() for _ in range(4))
    assert child and child != parent
