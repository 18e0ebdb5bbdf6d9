"""The whole role matrix over HTTP against a real `okuri serve`: every native operation, with a
key of every role limited to the namespace `ns-`, on a queue inside the namespace and one
outside it, is answered 200 exactly when `okuri.principals.roles.decide` allows it and 403
`forbidden` otherwise. The expectation is computed from `decide`, never copied by hand, so
this checks that the listener asks `decide` the right question for every route (the right
operation, the right queue) and renders its answer; tests/unit/test_native_keys.py checks
`decide` itself.

One server, queues made up front (a pair per operation, so the one delete a key may do touches
nothing else; each name is also an exchange), one request per cell: 20 operations x 4 roles x
2 names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest

from okuri.native.routes import ROUTES
from okuri.principals.keyfile import create_key
from okuri.principals.roles import OPERATIONS, ROLES, Operation, Role, decide
from tests.servers import ServerProcess, keyed_server

ADMIN = "native-matrix-test-admin-key-0123456789"  # every queue, to set the matrix up
NAMESPACE = "ns-"
TARGET = "ns-matrix-redrive-target"  # where an allowed redrive moves items (none here)


class Call(NamedTuple):
    method: str
    path: str
    body: Any = None


# One well-formed request per operation on queue `q`: only the key decides its answer.
REQUESTS: dict[Operation, Callable[[str], Call]] = {
    "create_queue": lambda q: Call("POST", "/v1/queues", {"name": q}),  # exists: idempotent
    "get_queue": lambda q: Call("GET", f"/v1/queues/{q}"),
    "list_queues": lambda q: Call("GET", f"/v1/queues?prefix={q}"),
    "update_queue": lambda q: Call(
        "PATCH", f"/v1/queues/{q}", {"attributes": {"lease_timeout_s": 45}}
    ),
    "delete_queue": lambda q: Call("DELETE", f"/v1/queues/{q}"),
    "purge_queue": lambda q: Call("POST", f"/v1/queues/{q}/purge", {}),
    "produce": lambda q: Call("POST", f"/v1/queues/{q}/messages", {"items": [{"body": "m"}]}),
    "lease": lambda q: Call("POST", f"/v1/queues/{q}/lease", {"max_items": 1}),
    "complete": lambda q: Call("POST", f"/v1/queues/{q}/complete", {"handles": ["okr1eA"]}),
    "retry": lambda q: Call("POST", f"/v1/queues/{q}/retry", {"items": [{"handle": "okr1eA"}]}),
    "extend": lambda q: Call(
        "POST", f"/v1/queues/{q}/extend", {"handles": ["okr1eA"], "lease_s": 30}
    ),
    "redrive": lambda q: Call("POST", f"/v1/queues/{q}/redrive", {"target": TARGET}),
    "browse": lambda q: Call("GET", f"/v1/queues/{q}/messages?limit=5"),
    # Exchanges: each pair name is also an exchange (and bind/unbind bind the same-named queue).
    "create_exchange": lambda x: Call("POST", "/v1/exchanges", {"name": x, "type": "direct"}),
    "get_exchange": lambda x: Call("GET", f"/v1/exchanges/{x}"),
    "list_exchanges": lambda x: Call("GET", f"/v1/exchanges?prefix={x}"),
    "delete_exchange": lambda x: Call("DELETE", f"/v1/exchanges/{x}"),
    "bind": lambda x: Call("POST", f"/v1/exchanges/{x}/bind", {"queue": x, "routing_key": "k"}),
    "unbind": lambda x: Call("POST", f"/v1/exchanges/{x}/unbind", {"queue": x, "routing_key": "k"}),
    "publish": lambda x: Call(
        "POST", f"/v1/exchanges/{x}/messages", {"routing_key": "k", "items": [{"body": "m"}]}
    ),
}


class Keys(NamedTuple):
    file: Path
    by_role: dict[Role, str]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    return Keys(path, {role: create_key(str(path), role, NAMESPACE)[0] for role in ROLES})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("native-matrix"), ADMIN, keys.file)
    yield proc
    proc.terminate()


def queue_pair(operation: Operation) -> dict[str, str]:
    """The queue inside the namespace and the one outside that `operation` is tried on."""
    name = "matrix-" + operation.replace("_", "-")
    return {"inside": NAMESPACE + name, "outside": "other-" + name}


def test_every_operation_role_and_namespace_is_answered_as_decide_says(
    server: ServerProcess, keys: Keys
) -> None:
    # Every operation a key may be granted has a request here, and each is routed.
    assert set(REQUESTS) == set(OPERATIONS)
    assert set(REQUESTS) == set(ROUTES.values()) - {"openapi"}
    with httpx.Client(base_url=server.url, timeout=30) as http:

        def send(call: Call, key: str) -> httpx.Response:
            headers = {"Authorization": f"Bearer {key}"}
            return http.request(call.method, call.path, json=call.body, headers=headers)

        for name in [TARGET, *(q for op in OPERATIONS for q in queue_pair(op).values())]:
            made = send(Call("POST", "/v1/queues", {"name": name}), ADMIN)
            assert made.status_code == 200, made.text
            made = send(REQUESTS["create_exchange"](name), ADMIN)
            assert made.status_code == 200, made.text

        wrong: list[str] = []
        cells = 0
        for operation in OPERATIONS:
            for place, queue in queue_pair(operation).items():
                for role in ROLES:
                    verdict = decide(operation, role, NAMESPACE, queue)
                    answer = send(REQUESTS[operation](queue), keys.by_role[role])
                    cells += 1
                    code = answer.json()["error"]["code"] if answer.status_code != 200 else None
                    want = (200, None) if verdict == "allow" else (403, "forbidden")
                    if (answer.status_code, code) != want:
                        wrong.append(
                            f"{operation} by {role} on the queue {place} the namespace: "
                            f"{verdict} wants {want}, got {answer.status_code} {answer.text}"
                        )
    assert not wrong, "\n".join(wrong)
    assert cells == len(OPERATIONS) * len(ROLES) * 2
