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

    def require(self, operation: Operation, queue: str) -> None:
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
                f"Queue {queue!r} is outside this key's namespace {p.namespace!r}.",
            )

    def list_prefix(self, prefix: str) -> str:
        self.require("list_queues", prefix)
        return list_prefix(self.principal.namespace, prefix)
