"""The native HTTP API's route table: which path and method run which operation.

Read from the API's one table of operations (okuri/api/operations.py), by the listener
(okuri/native/http.py) to dispatch and by the OpenAPI document (okuri/native/openapi.py) to
describe, so a route cannot be served without being documented or documented without being
served. `{queue}` stands for a queue's name in a path, `{exchange}` for an exchange's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from okuri.api.operations import EXCHANGE as EXCHANGE
from okuri.api.operations import QUEUE as QUEUE
from okuri.api.operations import SPECS, Operation

# The operations of okuri.api.operations, and the one route that needs no key.
Route = Operation | Literal["openapi"]

OPENAPI_PATH = "/v1/openapi.json"

ROUTES: Mapping[tuple[str, str], Route] = {
    (OPENAPI_PATH, "GET"): "openapi",
    **{(spec.path, spec.method): name for name, spec in SPECS.items()},
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
