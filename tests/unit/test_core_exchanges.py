"""The pure rules of exchanges: AMQP topic matching (with its edge cases), direct and fanout
routing, binding changes and their bound, and the document's round trip and invariants."""

from __future__ import annotations

import pytest

from okuri import limits
from okuri.core.exchanges import (
    Binding,
    ExchangeState,
    bind,
    binding_matches,
    check,
    check_step,
    decode,
    drop_queues,
    encode,
    route,
    topic_matches,
    unbind,
    validate_exchange_name,
    validate_routing_key,
    validate_type,
)
from okuri.errors import InvalidArgument, Unavailable


@pytest.mark.parametrize(
    ("pattern", "key", "matches"),
    [
        ("#", "", True),
        ("#", "a", True),
        ("#", "a.b.c", True),
        ("a.#", "a", True),
        ("a.#", "a.b", True),
        ("a.#", "a.b.c", True),
        ("a.#", "b.a", False),
        ("#.a", "a", True),
        ("#.a", "x.y.a", True),
        ("#.a", "x.a.y", False),
        ("a.#.b", "a.b", True),
        ("a.#.b", "a.x.y.b", True),
        ("a.#.b", "a.x.y", False),
        ("#.#", "a.b", True),
        ("#.#", "", True),
        ("*", "a", True),
        ("*", "", True),  # the empty key is one empty word
        ("*", "a.b", False),
        ("*.*", "a.b", True),
        ("*.*", "a", False),
        ("a.*", "a.", True),  # an empty last word is a word
        ("a.*", "a", False),
        ("a..b", "a..b", True),
        ("a.*.b", "a..b", True),
        ("*.#", "", True),
        ("*.#", "a.b.c", True),
        ("#.*", "a", True),
        ("a.*.#", "a", False),
        ("a.*.#", "a.b", True),
        ("celeryev.#", "celeryev.worker.heartbeat", True),
        ("worker.#", "worker-heartbeat", False),
        ("", "", True),
        ("", "a", False),
        ("a", "a", True),
        ("a", "ab", False),
        ("a#", "a.b", False),  # '#' only as a whole word
    ],
)
def test_topic_matching_follows_amqp(pattern: str, key: str, matches: bool) -> None:
    assert topic_matches(pattern, key) is matches


def test_direct_matches_the_key_exactly_and_fanout_everything() -> None:
    assert binding_matches("direct", "a.b", "a.b")
    assert not binding_matches("direct", "a.*", "a.b")
    assert not binding_matches("direct", "", "a")
    assert binding_matches("fanout", "x", "whatever")
    assert binding_matches("fanout", "", "")


def _state(kind: str = "topic", *bindings: tuple[str, str]) -> ExchangeState:
    return ExchangeState(
        "ex", validate_type(kind), 1, "life", 0, tuple(Binding(q, k) for q, k in bindings)
    )


def test_route_names_each_queue_once_in_binding_order() -> None:
    st = _state("topic", ("b", "a.*"), ("a", "#"), ("b", "a.b"), ("c", "x"))
    assert route(st, "a.b") == ["b", "a"]
    assert route(st, "x") == ["a", "c"]
    assert route(_state("fanout", ("q1", ""), ("q2", "k")), "anything") == ["q1", "q2"]
    assert route(_state("direct", ("q1", "k")), "other") == []


def test_bind_is_idempotent_and_moves_the_version() -> None:
    st = _state()
    once = bind(st, Binding("q", "k"), "t1")
    assert once is not None and once.bindings == (Binding("q", "k"),)
    assert once.version == 1 and once.tokens == ("t1",)
    assert bind(once, Binding("q", "k"), "t2") is None
    twice = bind(once, Binding("q", "other"), "t2")
    assert twice is not None and len(twice.bindings) == 2
    check_step(once, twice)


def test_unbind_removes_only_that_binding_and_missing_is_no_change() -> None:
    st = _state("direct", ("q", "a"), ("q", "b"))
    after = unbind(st, Binding("q", "a"), "t")
    assert after is not None and after.bindings == (Binding("q", "b"),)
    assert unbind(after, Binding("q", "a"), "t2") is None


def test_binding_count_is_bounded() -> None:
    st = _state("direct", *((f"q{i}", "") for i in range(limits.exchange_bindings_max)))
    with pytest.raises(InvalidArgument, match="bindings"):
        bind(st, Binding("one-more", ""), "t")
    assert bind(st, Binding("q0", ""), "t") is None  # an existing binding is still no change


def test_drop_queues_removes_every_binding_of_those_queues() -> None:
    st = _state("topic", ("gone", "a"), ("kept", "a"), ("gone", "b"))
    after = drop_queues(st, frozenset({"gone"}), "t")
    assert after is not None and after.bindings == (Binding("kept", "a"),)
    assert drop_queues(after, frozenset({"gone"}), "t") is None


def test_the_document_round_trips_and_bad_bytes_are_unavailable() -> None:
    st = bind(_state("fanout"), Binding("q", "k.#"), "tok")
    assert st is not None
    assert decode(encode(st)) == st
    for bad in (b"{", b"[]", b'{"name": "x"}', encode(st).replace(b"fanout", b"headers")):
        with pytest.raises(Unavailable):
            decode(bad)


def test_invariants_refuse_duplicates_and_foreign_steps() -> None:
    with pytest.raises(Unavailable):
        check(_state("direct", ("q", "k"), ("q", "k")))
    st = _state()
    with pytest.raises(AssertionError):
        check_step(st, st)
    with pytest.raises(AssertionError):
        check_step(st, _state("direct"))


def test_names_keys_and_types_are_checked() -> None:
    assert validate_exchange_name("celery-pidbox_1") == "celery-pidbox_1"
    for bad in ("", "a.b", "x" * (limits.exchange_name_chars_max + 1), 7, "a/b"):
        with pytest.raises(InvalidArgument):
            validate_exchange_name(bad)
    assert validate_routing_key("k" * limits.routing_key_chars_max)
    with pytest.raises(InvalidArgument):
        validate_routing_key("k" * (limits.routing_key_chars_max + 1))
    with pytest.raises(InvalidArgument):
        validate_routing_key(3)
    with pytest.raises(InvalidArgument):
        validate_type("headers")
