"""The native HTTP API's route table: which path and method run which operation.

One table, read by the listener (okuri/native/http.py) to dispatch and by the OpenAPI document
(okuri/native/openapi.py) to describe, so a route cannot be served without being documented or
documented without being served. `{queue}` stands for a queue's name in a path, `{exchange}`
for an exchange's.
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
EXCHANGES = "/v1/exchanges"
EXCHANGE = "/v1/exchanges/{exchange}"

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
    (EXCHANGES, "GET"): "list_exchanges",
    (EXCHANGES, "POST"): "create_exchange",
    (EXCHANGE, "GET"): "get_exchange",
    (EXCHANGE, "DELETE"): "delete_exchange",
    (EXCHANGE + "/bind", "POST"): "bind",
    (EXCHANGE + "/unbind", "POST"): "unbind",
    (EXCHANGE + "/messages", "POST"): "publish",
}

_ON_QUEUE = re.compile(r"/v1/queues/([^/]+)(/[a-z]+)?")
_ON_EXCHANGE = re.compile(r"/v1/exchanges/([^/]+)(/[a-z]+)?")


def match(path: str) -> tuple[str, dict[str, Route]]:
    """The queue or exchange `path` names ("" for none) and the methods it takes, each with
    its route; no methods when nothing is routed there. `path` has no trailing slash."""
    name, template = "", path
    if (m := _ON_QUEUE.fullmatch(path)) is not None:
        name, template = m.group(1), QUEUE + (m.group(2) or "")
    elif (m := _ON_EXCHANGE.fullmatch(path)) is not None:
        name, template = m.group(1), EXCHANGE + (m.group(2) or "")
    return name, {method: route for (p, method), route in ROUTES.items() if p == template}
