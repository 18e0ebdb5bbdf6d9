"""Fixtures several unit test modules share."""

from __future__ import annotations

import pytest

from okuri import limits


@pytest.fixture
def freed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Freed slots' objects deleted at once, and so every segment write checked by a read of
    the manifest: what a producer does when its write took longer than half the keep
    (okuri/engine/freed_slots.py), reached here without waiting that long."""
    monkeypatch.setattr(limits, "freed_slot_keep_s", 0.0)


@pytest.fixture
def short_keep(monkeypatch: pytest.MonkeyPatch) -> float:
    """A freed slot kept 0.3 s, so tests can watch it stay and then go."""
    monkeypatch.setattr(limits, "freed_slot_keep_s", 0.3)
    return 0.3
