"""The console's reads, pure: the in-memory history (depth, and sends and deletes since the
previous sample, per queue; bounded in samples and in queues; a queue gone from the node is
forgotten) and the key listing (ids, roles, namespaces; never a secret)."""

from __future__ import annotations

from okuri.console.history import History, Reading
from okuri.engine import Counts
from okuri.principals.keys import AccessKey, KeyTable, StoredKey, hash_key, key_id_of


class Node:
    """What a History reads, set by the test."""

    def __init__(self) -> None:
        self.counts: dict[str, Counts] = {}
        self.sent: dict[str, int] = {}
        self.deleted: dict[str, int] = {}

    def read(self) -> Reading:
        return Reading(dict(self.counts), dict(self.sent), dict(self.deleted))


def test_samples_hold_depth_and_traffic_since_the_previous_sample() -> None:
    node = Node()
    history = History(node.read)
    node.counts["a"] = Counts(visible=3, in_flight=1, delayed=2)
    node.sent["a"] = 10
    history.sample(1_000)
    node.sent["a"], node.deleted["a"] = 14, 2
    node.counts["a"] = Counts(visible=5)
    history.sample(11_000)
    got = [s.to_json() for s in history.series("a", 12_000)]
    # The first sample counts no traffic (nothing before it); the last is read now, not kept.
    assert got == [[1_000, 6, 0, 0], [11_000, 5, 4, 2], [12_000, 5, 0, 0]]
    node.sent["a"], node.deleted["a"] = 17, 3
    # 3 sends and 1 delete in half a period: 6 and 2 a period.
    assert history.series("a", 16_000)[-1].to_json() == [16_000, 5, 6, 2]
    # Tenfold at most: 3 sends in the period's first 0.1 s do not read as 300 a period.
    assert history.series("a", 11_100)[-1].to_json() == [11_100, 5, 30, 10]
    assert [s.at_ms for s in history.series("a", 13_000)] == [1_000, 11_000, 13_000]


def test_history_keeps_the_newest_samples_and_a_bounded_number_of_queues() -> None:
    node = Node()
    history = History(node.read, samples_max=3, queues_max=2)
    node.counts = {"a": Counts(), "b": Counts(), "c": Counts()}
    for t in range(5):
        history.sample(t)
    assert [s.at_ms for s in history.series("a", 9)] == [2, 3, 4, 9]
    assert [s.at_ms for s in history.series("c", 9)] == [9]  # past the cap: only the present
    del node.counts["a"]
    history.sample(5)
    assert history.series("a", 9) == []
    assert [s.at_ms for s in history.series("c", 9)] == [5, 9]  # took the freed place


def test_the_key_listing_names_keys_without_their_secrets_or_hashes() -> None:
    stored = StoredKey(hash_key("producer-key-0123456789-abcdef"), "producer", "shop-")
    access = AccessKey("AKIDSHOP", "shop-secret-0123456789", "consumer", "shop-")
    table = KeyTable("admin-key-0123456789-abcdefgh", [stored, access], ("AKIDENV", "env-secret"))
    rows = table.listed()
    assert [(r["id"], r["role"], r["namespace"]) for r in rows] == [
        ("admin-key", "admin", ""),
        (key_id_of(stored.digest), "producer", "shop-"),
        ("AKIDENV", "admin", ""),
        ("AKIDSHOP", "consumer", "shop-"),
    ]
    text = repr(rows)
    for secret in ("producer-key", "shop-secret", "env-secret", "admin-key-0123", stored.digest):
        assert secret not in text
