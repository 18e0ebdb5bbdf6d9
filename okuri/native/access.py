"""One request's principal, and the checks the operations make against it (403 on refusal).

The rule itself is `okuri.principals.roles.decide`; this only turns its answer into the error.
"""

from __future__ import annotations

from dataclasses import dataclass

from okuri.native.errors import NativeError
from okuri.principals.roles import Operation, Principal, decide, list_prefix


@dataclass(frozen=True, slots=True)
class Access:
    principal: Principal

    def require(self, operation: Operation, queue: str, kind: str = "Queue") -> None:
        """Refuse (403) `operation` on `queue` (an exchange's name, when `kind` says so)."""
        p = self.principal
        verdict = decide(operation, p.role, p.namespace, queue)
        if verdict == "wrong_role":
            raise NativeError(
                403, "forbidden", f"A {p.role} key may not {operation.replace('_', ' ')}."
            )
        if verdict == "out_of_namespace":
            raise NativeError(
                403,
                "forbidden",
                f"{kind} {queue!r} is outside this key's namespace {p.namespace!r}.",
            )

    def require_route(self, exchange: str, queue: str) -> None:
        """Refuse (403) a publish through `exchange` that would deliver into `queue`, a queue
        this key may not produce to. The namespace is the boundary, whoever made the binding:
        a publish reaches no further than a produce would."""
        p = self.principal
        if decide("produce", p.role, p.namespace, queue) != "allow":
            raise NativeError(
                403,
                "forbidden",
                f"Exchange {exchange!r} routes to queue {queue!r}, which this key may not "
                f"produce to (namespace {p.namespace!r}); nothing was published.",
            )

    def list_prefix(self, prefix: str) -> str:
        self.require("list_queues", prefix)
        return self.namespace_prefix(prefix)

    def namespace_prefix(self, prefix: str) -> str:
        """The prefix a listing allowed for `prefix` really uses (narrowed to the namespace)."""
        return list_prefix(self.principal.namespace, prefix)
