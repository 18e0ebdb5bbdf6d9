"""The transport's settings: kombu's `transport_options` (Celery's `broker_transport_options`)
read and checked once, into one frozen value.

| option | meaning [default] |
| --- | --- |
| `lease_s` | each leased message's lease, renewed while the consumer holds it [60] |
| `wait_time_s` | a lease's long poll, 0 to 20 s; capped by drain_events' timeout [10] |
| `queue_name_prefix` | prepended to every queue name [""] |
| `queue_attributes` | okuri attributes of the queues this transport creates [{}] |
| `queue_overrides` | per kombu queue name, attributes over `queue_attributes` [{}] |
| `key` | the bearer key, when the URL does not carry it [None] |
| `timeout_s` | each HTTP request's timeout, a long poll's wait added [10] |
| `polling_interval` | kombu's pause after an empty poll [0, or 1 when `wait_time_s` is 0] |
| `confirm_publish` | a publish returns once okuri committed it; false: at once [True] |

With `confirm_publish` false a thread sends publishes in batches (okuri_kombu/publisher.py).
Options kombu or Celery put there for other purposes are left alone. A known option of the wrong
type or out of range is a `ValueError` naming it, raised when the connection is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LEASE_S_MAX = 12 * 60 * 60  # okuri's limits.visibility_s_max
WAIT_S_MAX = 20  # okuri's limits.wait_s_max
QUEUE_ATTRIBUTES = (
    "lease_timeout_s",
    "max_attempts",
    "dead_letter_queue",
    "retention_s",
    "delay_s",
    "expires_s",
)


@dataclass(frozen=True, slots=True)
class Options:
    lease_s: int = 60
    wait_time_s: int = 10
    queue_name_prefix: str = ""
    queue_attributes: Mapping[str, Any] = field(default_factory=dict)
    queue_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    key: str | None = None
    timeout_s: float = 10.0
    confirm_publish: bool = True

    @classmethod
    def read(cls, given: Mapping[str, Any]) -> Options:
        """The options in kombu's `transport_options` `given`."""
        defaults = cls()
        overrides = given.get("queue_overrides") or {}
        if not isinstance(overrides, Mapping):
            raise ValueError(
                "transport option 'queue_overrides' must map queue names to attributes"
            )
        return cls(
            lease_s=_integer(given, "lease_s", defaults.lease_s, 1, LEASE_S_MAX),
            wait_time_s=_integer(given, "wait_time_s", defaults.wait_time_s, 0, WAIT_S_MAX),
            queue_name_prefix=_text(given, "queue_name_prefix") or "",
            queue_attributes=_attributes(given.get("queue_attributes"), "queue_attributes"),
            queue_overrides={
                str(name): _attributes(attrs, f"queue_overrides[{name!r}]")
                for name, attrs in overrides.items()
            },
            key=_text(given, "key"),
            timeout_s=_number(given, "timeout_s", defaults.timeout_s),
            confirm_publish=_boolean(given, "confirm_publish", defaults.confirm_publish),
        )

    def attributes_for(self, queue: str) -> dict[str, Any]:
        """The attributes okuri:// creates kombu queue `queue` with: the lease it leases with
        as the queue's default lease, then `queue_attributes`, then the queue's overrides."""
        return {
            "lease_timeout_s": self.lease_s,
            **self.queue_attributes,
            **self.queue_overrides.get(queue, {}),
        }


def _integer(given: Mapping[str, Any], name: str, default: int, least: int, most: int) -> int:
    value = given.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ValueError(f"transport option {name!r} must be an integer from {least} to {most}")
    return value


def _number(given: Mapping[str, Any], name: str, default: float) -> float:
    value = given.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"transport option {name!r} must be a number of seconds above 0")
    return float(value)


def _boolean(given: Mapping[str, Any], name: str, default: bool) -> bool:
    value = given.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"transport option {name!r} must be true or false")
    return value


def _text(given: Mapping[str, Any], name: str) -> str | None:
    value = given.get(name)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"transport option {name!r} must be a string")
    return value


def _attributes(value: object, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"transport option {where} must be a mapping of queue attributes")
    unknown = sorted(set(map(str, value)) - set(QUEUE_ATTRIBUTES))
    if unknown:
        raise ValueError(
            f"transport option {where}: unknown queue attribute(s) {', '.join(unknown)}; "
            f"okuri's are {', '.join(QUEUE_ATTRIBUTES)}"
        )
    return dict(value)
