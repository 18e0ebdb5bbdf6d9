"""The native HTTP API's route table: which path and method run which operation.

One table, read by the listener (okuri/native/http.py) to dispatch and by the OpenAPI document
(okuri/native/openapi.py) to describe, so a route cannot be served without being documented or
documented without being served. `{queue}` stands for a queue's name in a path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from okuri.principals.roles import Operation

# The operations of okuri.principals.roles, and the one route that needs no key.
Route = Operation | Literal["openapi"]

OPENAPI_PATH = "/v1/openapi.json"
QUEUES = "/v1/queues"
QUEUE = "/v1/queues/{queue}"

ROUTES: Mapping[tuple[str, str], Route] = {
    (OPENAPI_PATH, "GET"): "openapi",
    (QUEUES, "GET"): "list_queues",
    (QUEUES, "POST"): "create_queue",
    (QUEUE, "GET"): "get_queue",
    (QUEUE, "PATCH"): "update_queue",
    (QUEUE, "DELETE"): "delete_queue",
    (QUEUE + "/purge", "POST"): "purge_queue",
    (QUEUE + "/messages", "POST"): "produce",
    (QUEUE + "/lease", "POST"): "lease",
    (QUEUE + "/complete", "POST"): "complete",
    (QUEUE + "/retry", "POST"): "retry",
    (QUEUE + "/extend", "POST"): "extend",
    (QUEUE + "/redrive", "POST"): "redrive",
}

_ON_QUEUE = re.compile(r"/v1/queues/([^/]+)(/[a-z]+)?")


def match(path: str) -> tuple[str, dict[str, Route]]:
    """The queue `path` names ("" for none) and the methods it takes, each with its route;
    no methods when nothing is routed there. `path` has no trailing slash."""
    queue, template = "", path
    if (m := _ON_QUEUE.fullmatch(path)) is not None:
        queue, template = m.group(1), QUEUE + (m.group(2) or "")
    return queue, {method: route for (p, method), route in ROUTES.items() if p == template}
