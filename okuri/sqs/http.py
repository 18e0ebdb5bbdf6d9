"""The SQS listener: AWS JSON 1.0 and the legacy query protocol over HTTP, SigV4-verified.

One request: read the body (bounded), tell the protocol (a JSON request names its action in
X-Amz-Target; a query request is form-encoded or carries `Action=` in its URL), verify the
signature, decode the members, check the request's shape, run the action, answer in the
request's protocol. Every failure on the way becomes an SQS-shaped error in that protocol
(okuri.sqs.errors); nothing a client sends can produce a traceback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import orjson
from aiohttp import web

from okuri import __version__, access_log, limits
from okuri.clock import Clock
from okuri.engine import BodyReader, Gate, Holding, Refused, Ticket, sender_of
from okuri.errors import BodyUnread, OkuriError
from okuri.principals.keys import KeyTable
from okuri.principals.roles import Principal
from okuri.sqs import access, query
from okuri.sqs.actions import SqsActions
from okuri.sqs.errors import SqsError, from_okuri
from okuri.sqs.shapes import ACTIONS, UNSUPPORTED, check_request
from okuri.sqs.sigv4 import SignedRequest, verify
from okuri.sqs.sigv4_errors import INVALID_TOKEN_MESSAGE, AuthError

log = logging.getLogger("okuri.sqs")

ANONYMOUS = Principal("anonymous", "admin", "")  # every request, when authentication is off
AWS_JSON = "application/x-amz-json-1.0"
TARGET_PREFIX = "AmazonSQS."
UNKNOWN_OPERATION = "UnknownOperationException"
# Ten 1 MiB entries would exceed SQS's batch limit anyway; base64 attributes and JSON escaping
# can double a body, so allow that much before refusing to read further.


def _respond(
    status: int, body: dict[str, Any], request_id: str, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status,
        body=orjson.dumps(body),
        content_type=AWS_JSON,
        headers={"x-amzn-RequestId": request_id, **(headers or {})},
    )


def _respond_xml(status: int, body: bytes, request_id: str) -> web.Response:
    return web.Response(
        status=status,
        body=body,
        content_type=query.CONTENT_TYPE,
        headers={"x-amzn-RequestId": request_id},
    )


def error_response(err: SqsError, request_id: str, is_query: bool = False) -> web.Response:
    if is_query:
        return _respond_xml(err.status, query.error_response(err, request_id), request_id)
    return _respond(err.status, err.body(), request_id, {"x-amzn-query-error": err.query_error})


class SqsHttp:
    def __init__(
        self,
        actions: SqsActions,
        clock: Clock,
        keys: Callable[[], KeyTable] | None,
        regional: Callable[[str | None], SqsActions] | None = None,
        gate: Gate | None = None,
        read_timeout_s: float = limits.read_timeout_s_default,
    ) -> None:
        """`keys` gives the current key table (it changes on SIGHUP): each access key's secret
        and principal; None turns authentication off, every request acting as an admin of
        every queue. `regional` gives the actions of the region a request is signed for (the
        home region's `actions` when absent). `gate` holds each body's bytes against its sender
        while it is read and admits the request once its signature is verified (None: no
        bounds); past the node's bounds the request is answered RequestThrottled. A body that
        pauses for `read_timeout_s` is answered RequestTimeout (okuri.engine.intake)."""
        self.actions = actions
        self.gate = gate
        self.regional = regional
        self.clock = clock
        self.keys = keys
        self.bodies = BodyReader(clock, read_timeout_s)
        self.stats: dict[tuple[str, str], int] = {}

    def _count(self, action: str, outcome: str) -> None:
        key = (action, outcome)
        self.stats[key] = self.stats.get(key, 0) + 1

    def metric_lines(self) -> list[str]:
        """Prometheus lines: requests by action and outcome ("ok" or the error code)."""
        lines = [
            "# HELP okuri_sqs_requests_total SQS requests by action and outcome.",
            "# TYPE okuri_sqs_requests_total counter",
        ]
        lines += [
            f'okuri_sqs_requests_total{{action="{action}",outcome="{outcome}"}} {n}'
            for (action, outcome), n in sorted(self.stats.items())
        ]
        return lines

    async def handle(self, request: web.Request) -> web.Response:
        """Answer `request`; with the access log on, write its record (same id as answered)."""
        request_id = self.clock.new_id()
        entry = access_log.Entry("Unknown")
        if not access_log.on():
            return await self._handle(request, request_id, entry)
        started_s = self.clock.monotonic_s()
        response = await self._handle(request, request_id, entry)
        duration_ms = (self.clock.monotonic_s() - started_s) * 1000
        access_log.emit("sqs", request_id, entry, response.status, duration_ms)
        return response

    async def _handle(
        self, request: web.Request, request_id: str, entry: access_log.Entry
    ) -> web.Response:
        action = "Unknown"
        is_query = False
        ticket: Ticket | None = None
        holding: Holding | None = None
        try:
            if (
                request.method in ("GET", "HEAD")
                and request.path == "/"
                and not request.query_string
            ):
                entry.action = "ServiceInfo"
                return web.Response(
                    body=orjson.dumps({"service": "okuri", "version": __version__}),
                    content_type="application/json",
                    headers={"x-amzn-RequestId": request_id},
                )
            if (
                request.method in ("GET", "HEAD")
                and "X-Amz-Target" not in request.headers
                and "Action" not in request.rel_url.query
            ):
                # SQS answers a GET naming no action with a bare 404 document, before it looks
                # at the signature (recorded).
                self._count(action, UNKNOWN_OPERATION)
                return _respond_xml(404, f"<{UNKNOWN_OPERATION}/>".encode(), request_id)
            is_query = query.is_query(
                request.method,
                request.content_type,
                request.rel_url.query,
                "X-Amz-Target" in request.headers,
            )
            if self.gate is not None:
                holding = self.gate.hold_unverified(sender_of(request.remote))
            body = await self.bodies.read(
                request.content, request.content_length, holding=holding
            )
            table = self.keys() if self.keys is not None else None
            principal = self._authenticate(request, body, table)
            caller = entry.key_id = principal.key_id
            if self.gate is not None:  # verified: its body now counts as every request's does
                admitted = self.gate.try_enter("request", len(body))
                if isinstance(admitted, Refused):
                    action = _named_action(request)
                    raise admitted.error()
                ticket = admitted
            if holding is not None:
                holding.release()
            if is_query:
                action, params = self._query_request(request, body)
            else:
                action = self._action(request)
                params = self._json_members(body)
            entry.action = action
            if isinstance(params, dict):
                entry.params = params  # the queue, for the record of a request refused next
            params = check_request(action, params)
            entry.params = params
            actions = self.regional(_signed_region(request)) if self.regional else self.actions
            if table is not None:
                params = access.authorize(actions, principal, action, params)
            result = await actions.dispatch(
                action,
                params,
                request.host if request.scheme == "http" else f"https://{request.host}",
                caller,
                request.headers.get("X-Amzn-Trace-Id"),
            )
            result = access.narrow(principal, action, result)
            self._count(action, "ok")
            if is_query:
                return _respond_xml(200, query.response(action, result, request_id), request_id)
            return _respond(200, result, request_id)
        except Exception as exc:
            if isinstance(exc, SqsError):
                err = exc
            elif isinstance(exc, OkuriError):  # the engine's, or a refused signature
                err = from_okuri(exc)
            else:
                log.exception("request %s (%s) failed", request_id, action)
                err = SqsError("InternalFailure", "The request could not be processed.", 500, False)
            self._count(action, err.code)
            # Refused before its action was decoded: the one it names, if its header or URL does.
            entry.action = action if action != "Unknown" else _named_action(request)
            if not entry.key_id:  # refused before it was verified: the id it claims
                entry.key_id = _claimed_key_id(request)
            response = error_response(err, request_id, is_query)
            if isinstance(exc, BodyUnread) and exc.reason != "too_large":
                response.force_close()  # the rest of its body is not worth waiting for
            return response
        finally:
            if ticket is not None:
                ticket.release()
            if holding is not None:
                holding.release()

    @staticmethod
    def _json_members(body: bytes) -> Any:
        try:
            return orjson.loads(body) if body.strip() else {}
        except orjson.JSONDecodeError:
            raise SqsError(
                "SerializationException", "The request body is not valid JSON."
            ) from None

    def _query_request(self, request: web.Request, body: bytes) -> tuple[str, dict[str, Any]]:
        """The action and JSON-equivalent members of a query request (URL and form merged)."""
        try:
            form = body.decode() if request.content_type == query.FORM_TYPE else ""
        except UnicodeDecodeError:
            raise SqsError("MalformedQueryString", "The request body is not UTF-8.") from None
        pairs = [
            *parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True),
            *parse_qsl(form, keep_blank_values=True),
        ]
        action = query.action_of(pairs)
        if not action:
            raise SqsError("MissingAction", "The request must contain the parameter Action.")
        self._check_action(action)
        if action in query.SERVICE_ACTIONS and query.queue_path(request.path):
            raise SqsError("InvalidAction", f"The action {action} is not valid for this endpoint.")
        base = self.actions.public_url or f"{request.scheme}://{request.host}"
        return action, query.decode(action, pairs, request.path, base)

    def _authenticate(self, request: web.Request, body: bytes, table: KeyTable | None) -> Principal:
        """Who signed the request (SigV4 against the table's secrets); AuthError if nobody."""
        if table is None:
            return ANONYMOUS
        signed = SignedRequest(
            method=request.method,
            path=request.raw_path.split("?", 1)[0],
            query=request.rel_url.raw_query_string,
            headers=request.headers,
            body=body,
        )
        key_id = verify(signed, table.secret, self.clock.now_ms())
        principal = table.access_principal(key_id)
        if principal is None:  # never: `table` is one snapshot and verify found the id in it
            raise AuthError("InvalidClientTokenId", 403, INVALID_TOKEN_MESSAGE)
        return principal

    def _action(self, request: web.Request) -> str:
        target = request.headers.get("X-Amz-Target", "")
        if not target:
            raise SqsError("MissingAction", "The request must contain the header X-Amz-Target.")
        action = target.removeprefix(TARGET_PREFIX)
        if action == target or not action:
            raise SqsError(
                "InvalidAction", f"The action {target[:100]} is not valid for this endpoint."
            )
        self._check_action(action)
        return action

    @staticmethod
    def _check_action(action: str) -> None:
        if action in UNSUPPORTED:
            raise SqsError("UnsupportedOperation", f"{action} is not supported by okuri.")
        if action not in ACTIONS:
            raise SqsError(
                "InvalidAction", f"The action {action[:100]} is not valid for this endpoint."
            )


def _named_action(request: web.Request) -> str:
    """The action a request names before its body is read (the metrics' label for one refused
    then), when its header or URL names a known one; else "Unknown"."""
    named = request.headers.get("X-Amz-Target", "").removeprefix(TARGET_PREFIX)
    named = named or request.rel_url.query.get("Action", "")
    return named if named in ACTIONS else "Unknown"


_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/[0-9]{8}/([^/,\s]+)/")
_CREDENTIAL_KEY = re.compile(r"Credential=([A-Za-z0-9_.-]{1,128})/")


def _claimed_key_id(request: web.Request) -> str:
    """The access key id a refused request claims (header or presigned), for its log record
    only: not verified, and never a secret."""
    found = _CREDENTIAL_KEY.search(request.headers.get("Authorization", ""))
    if found is not None:
        return found.group(1)
    claimed = request.rel_url.query.get("X-Amz-Credential", "").partition("/")[0]
    return claimed if _CREDENTIAL_KEY.fullmatch(f"Credential={claimed}/") else ""


def _signed_region(request: web.Request) -> str | None:
    """The region in the request's SigV4 credential scope (header or presigned), if any."""
    found = _CREDENTIAL_SCOPE.search(request.headers.get("Authorization", ""))
    if found is not None:
        return found.group(1)
    credential = request.rel_url.query.get("X-Amz-Credential", "")
    parts = credential.split("/")
    return parts[2] if len(parts) == 5 else None
