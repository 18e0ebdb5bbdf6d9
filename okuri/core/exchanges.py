"""Exchanges, purely: the exchange document, its routing rules and its binding changes.

An exchange routes a published item to the queues bound to it (AMQP's model, as kombu and
Celery expect it): `direct` when the binding key equals the routing key, `topic` by AMQP's
pattern rules (words split on `.`, `*` exactly one word, `#` zero or more words), `fanout` to
every bound queue whatever the key. The document is one object in the bucket, rewritten by
compare-and-swap (okuri/engine/exchanges.py); every change here is a pure function of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

import orjson

from okuri import limits
from okuri.errors import InvalidArgument, Unavailable

ExchangeType = Literal["direct", "topic", "fanout"]
EXCHANGE_TYPES: tuple[ExchangeType, ...] = get_args(ExchangeType)
# The queue-name charset, without .fifo: clients translate AMQP's dots to dashes.
EXCHANGE_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{limits.exchange_name_chars_max}}}")
TOKENS_KEPT = 16  # commit tokens remembered, to settle an ambiguous write


@dataclass(frozen=True, slots=True)
class Binding:
    queue: str
    routing_key: str


@dataclass(frozen=True, slots=True)
class ExchangeState:
    """One exchange. `lineage` names this life of it (deleted and declared again: a new one);
    `version` grows on every write; `tokens` are the latest writes' commit tokens."""

    name: str
    type: ExchangeType
    created_ms: int
    lineage: str
    version: int = 0
    bindings: tuple[Binding, ...] = ()
    tokens: tuple[str, ...] = ()


def validate_exchange_name(name: object) -> str:
    if not isinstance(name, str) or not EXCHANGE_NAME.fullmatch(name):
        raise InvalidArgument(
            f"An exchange name is 1 to {limits.exchange_name_chars_max} letters, digits, '-' "
            "or '_'.",
            "name",
        )
    return name


def validate_routing_key(key: object, field: str = "routing_key") -> str:
    if not isinstance(key, str):
        raise InvalidArgument(f"{field!r} must be a string.", field)
    if len(key) > limits.routing_key_chars_max:
        raise InvalidArgument(
            f"{field!r} must be at most {limits.routing_key_chars_max} characters.", field
        )
    return key


def validate_type(kind: object) -> ExchangeType:
    for t in EXCHANGE_TYPES:
        if kind == t:
            return t
    raise InvalidArgument(f"'type' must be one of {', '.join(EXCHANGE_TYPES)}.", "type")


# --- routing -------------------------------------------------------------------------------------


def topic_matches(pattern: str, key: str) -> bool:
    """AMQP topic matching: both split on `.` (an empty string is one empty word); `*` matches
    exactly one word, `#` zero or more, any other word itself."""
    return _match(pattern.split("."), 0, key.split("."), 0)


def _match(pat: list[str], i: int, words: list[str], j: int) -> bool:
    while i < len(pat):
        p = pat[i]
        if p == "#":
            while i + 1 < len(pat) and pat[i + 1] == "#":
                i += 1  # '#.#' is '#'
            if i + 1 == len(pat):
                return True
            return any(_match(pat, i + 1, words, k) for k in range(j, len(words) + 1))
        if j == len(words) or (p != "*" and p != words[j]):
            return False
        i, j = i + 1, j + 1
    return j == len(words)


def binding_matches(kind: ExchangeType, binding_key: str, routing_key: str) -> bool:
    if kind == "fanout":
        return True
    if kind == "direct":
        return binding_key == routing_key
    return topic_matches(binding_key, routing_key)


def route(state: ExchangeState, routing_key: str) -> list[str]:
    """The queues `routing_key` reaches, each once, in the order of their first binding."""
    out: dict[str, None] = {}
    for b in state.bindings:
        if b.queue not in out and binding_matches(state.type, b.routing_key, routing_key):
            out[b.queue] = None
    return list(out)


# --- changes -------------------------------------------------------------------------------------


def bind(state: ExchangeState, binding: Binding, token: str) -> ExchangeState | None:
    """`state` with `binding` added; None when it is there already. Past the bound on bindings
    the change is refused."""
    if binding in state.bindings:
        return None
    if len(state.bindings) >= limits.exchange_bindings_max:
        raise InvalidArgument(
            f"Exchange {state.name!r} has {len(state.bindings)} bindings, the most an exchange "
            "may have.",
            "bindings",
        )
    return _written(state, (*state.bindings, binding), token)


def unbind(state: ExchangeState, binding: Binding, token: str) -> ExchangeState | None:
    """`state` without `binding`; None when it was not bound."""
    if binding not in state.bindings:
        return None
    return _written(state, tuple(b for b in state.bindings if b != binding), token)


def drop_queues(state: ExchangeState, queues: frozenset[str], token: str) -> ExchangeState | None:
    """`state` without any binding to `queues` (queues that no longer exist); None if none."""
    kept = tuple(b for b in state.bindings if b.queue not in queues)
    if len(kept) == len(state.bindings):
        return None
    return _written(state, kept, token)


def _written(state: ExchangeState, bindings: tuple[Binding, ...], token: str) -> ExchangeState:
    tokens = (*state.tokens, token)[-TOKENS_KEPT:]
    return replace(state, version=state.version + 1, bindings=bindings, tokens=tokens)


# --- the document --------------------------------------------------------------------------------


def check(state: ExchangeState) -> None:
    """The invariants of one exchange document."""
    if len(state.bindings) > limits.exchange_bindings_max:
        raise Unavailable(f"exchange {state.name!r} holds more bindings than allowed")
    if len(set(state.bindings)) != len(state.bindings):
        raise Unavailable(f"exchange {state.name!r} holds a binding twice")


def check_step(old: ExchangeState, new: ExchangeState) -> None:
    """A write keeps the exchange's name, type and life, and moves its version on."""
    if (old.name, old.type, old.lineage) != (new.name, new.type, new.lineage):
        raise AssertionError("an exchange write changed its name, type or lineage")
    if new.version <= old.version:
        raise AssertionError("an exchange write did not move its version on")


def encode(state: ExchangeState) -> bytes:
    return orjson.dumps(
        {
            "name": state.name,
            "type": state.type,
            "created_ms": state.created_ms,
            "lineage": state.lineage,
            "version": state.version,
            "bindings": [[b.queue, b.routing_key] for b in state.bindings],
            "tokens": list(state.tokens),
        }
    )


def decode(data: bytes) -> ExchangeState:
    """The document stored as `data`; Unavailable when it does not read as one."""
    try:
        doc: Any = orjson.loads(data)
        state = ExchangeState(
            name=str(doc["name"]),
            type=validate_type(doc["type"]),
            created_ms=int(doc["created_ms"]),
            lineage=str(doc["lineage"]),
            version=int(doc["version"]),
            bindings=tuple(Binding(str(q), str(k)) for q, k in doc["bindings"]),
            tokens=tuple(str(t) for t in doc["tokens"]),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, InvalidArgument) as err:
        raise Unavailable(f"an exchange document is unreadable: {err!r}") from err
    return state
