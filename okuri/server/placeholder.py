"""The main listener's stand-in until the SQS surface lands (the next issue replaces this module).

It exists so the port is claimed, deployments can be wired end to end, and an SDK pointed at
okuri today fails with an error it understands: every request but `GET /` answers the way SQS
answers an action it does not know (AWS JSON 1.0 error shape, HTTP 400, the query-compatible
error header), instead of a bare 404 the SDK would misreport as a network problem.
"""

from __future__ import annotations

import orjson
from aiohttp import web

from okuri import __version__
from okuri.clock import Clock

AWS_JSON = "application/x-amz-json-1.0"
UNSUPPORTED_TYPE = "com.amazonaws.sqs#UnsupportedOperation"
UNSUPPORTED_QUERY_ERROR = "AWS.SimpleQueueService.UnsupportedOperation;Sender"
TARGET_CHARS_MAX = 100  # the echoed X-Amz-Target is attacker-controlled; keep the answer small


def placeholder_app(clock: Clock) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        if request.method in ("GET", "HEAD") and request.path == "/":
            return web.Response(
                body=orjson.dumps({"service": "okuri", "version": __version__}),
                content_type="application/json",
            )
        target = request.headers.get("X-Amz-Target", "")[:TARGET_CHARS_MAX]
        what = f"The action {target}" if target else "This request"
        body = {
            "__type": UNSUPPORTED_TYPE,
            "message": f"{what} is not supported by this okuri server yet.",
        }
        return web.Response(
            status=400,
            body=orjson.dumps(body),
            content_type=AWS_JSON,
            headers={
                "x-amzn-query-error": UNSUPPORTED_QUERY_ERROR,
                "x-amzn-RequestId": clock.new_id(),
            },
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app
