"""Roles, namespaces and operations: who may do what to which queue, decided purely.

The decision is a function of (operation, role, namespace, queue), so every cell of the matrix
is a unit test. The operations are the native API's vocabulary, listed once in
okuri/api/operations.py; the SQS surface maps each of
its actions onto one of them (`okuri.sqs.access`), so one key means the same on both surfaces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from okuri.api.operations import OPERATIONS as OPERATIONS
from okuri.api.operations import Operation as Operation

Role = Literal["admin", "producer", "consumer", "readonly"]
ROLES: tuple[Role, ...] = get_args(Role)

_READ: frozenset[Operation] = frozenset(
    {"get_queue", "list_queues", "get_exchange", "list_exchanges"}
)
# What each role may do; admin may do everything, within its namespace.
GRANTS: Mapping[Role, frozenset[Operation]] = {
    "admin": frozenset(OPERATIONS),
    "producer": _READ | {"produce", "publish"},
    # browse shows item bodies: for those who may lease them anyway.
    "consumer": _READ | {"lease", "complete", "retry", "extend", "browse", "bind", "unbind"},
    "readonly": _READ,
}

Decision = Literal["allow", "wrong_role", "out_of_namespace"]

# A namespace is a queue-name prefix: queue-name characters only, possibly none (every queue).
NAMESPACE = re.compile(r"[A-Za-z0-9_-]{0,80}")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as. `key_id` names the key in logs and errors; it is not secret
    (a bearer key's hash prefix, or an SQS access key id)."""

    key_id: str
    role: Role
    namespace: str = ""


def decide(operation: Operation, role: Role, namespace: str, queue: str) -> Decision:
    """Whether `role` limited to `namespace` may do `operation` on `queue` (for list_queues,
    `queue` is the listed prefix: allowed when it lies inside the namespace or the namespace
    inside it, the listing then narrowed by `list_prefix`). For an exchange's operations
    `queue` is the exchange's name (exchanges share the namespace's prefix rule); a bind or
    unbind is checked again for the bound queue."""
    if operation not in GRANTS[role]:
        return "wrong_role"
    if queue.startswith(namespace):
        return "allow"
    if operation in ("list_queues", "list_exchanges") and namespace.startswith(queue):
        return "allow"
    return "out_of_namespace"


def list_prefix(namespace: str, prefix: str) -> str:
    """The prefix a listing really uses: the longer of the two (one contains the other once
    `decide` allowed the listing)."""
    return prefix if len(prefix) >= len(namespace) else namespace
