"""SQS's legacy query protocol: form-encoded `Action=...` requests in, XML documents out.

Older SDKs (aws-sdk-go and boto3 before late 2023, aws-sdk-php, the Java v1 SDK) speak
it. Rather than a second set of actions, a query request is translated into the same members the
AWS JSON 1.0 surface receives, and the action's JSON result is rendered back as SQS's XML, so both
protocols share one validation path and can never disagree on behaviour.

The translation is by member name, as SQS's query names are a mechanical function of the JSON
ones: a map `Attributes` travels as `Attribute.N.Name` / `Attribute.N.Value`, a string list
`AttributeNames` as `AttributeName.N`, a batch `Entries` as `<Action>RequestEntry.N.<member>`.
Pure: no HTTP, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from okuri.digits import whole_number
from okuri.sqs.errors import SqsError, invalid
from okuri.sqs.shapes import ACTIONS, integer

API_VERSION = "2012-11-05"
XMLNS = f"http://queue.amazonaws.com/doc/{API_VERSION}/"
CONTENT_TYPE = "text/xml"
FORM_TYPE = "application/x-www-form-urlencoded"

# JSON map member -> (query element, key name, value name).
MAPS: dict[str, tuple[str, str, str]] = {
    "Attributes": ("Attribute", "Name", "Value"),
    "MessageAttributes": ("MessageAttribute", "Name", "Value"),
    "MessageSystemAttributes": ("MessageSystemAttribute", "Name", "Value"),
    "Tags": ("Tag", "Key", "Value"),  # CreateQueue's `tags` too: renamed in `decode`
}
# Request: the query element a list's items travel as -> the JSON list member.
REQUEST_LISTS: dict[str, str] = {
    "AttributeName": "AttributeNames",
    "MessageAttributeName": "MessageAttributeNames",
    "MessageSystemAttributeName": "MessageSystemAttributeNames",
    "TagKey": "TagKeys",
    "AWSAccountId": "AWSAccountIds",
    "ActionName": "Actions",
    "StringListValue": "StringListValues",
    "BinaryListValue": "BinaryListValues",
}
# Response: JSON list member -> the element each item is rendered as.
LISTS: dict[str, str] = {
    **{member: element for element, member in REQUEST_LISTS.items()},
    "QueueUrls": "QueueUrl",
    "queueUrls": "QueueUrl",
    "Messages": "Message",
    "Failed": "BatchResultErrorEntry",
    "Results": "ListMessageMoveTasksResultEntry",
}
# The members the JSON shapes type as integers (a batch entry's integers are also top-level
# members of the single-message actions: DelaySeconds, VisibilityTimeout).
INTEGERS = frozenset(
    name for members, _ in ACTIONS.values() for name, check in members.items() if check is integer
)
# Parameters that belong to the envelope or to a signature, not to the action.
ENVELOPE = frozenset({"Action", "Version"})
# Actions whose XML response carries no <ActionResult> element.
NO_RESULT = frozenset(
    {
        "DeleteQueue",
        "PurgeQueue",
        "SetQueueAttributes",
        "DeleteMessage",
        "ChangeMessageVisibility",
        "TagQueue",
        "UntagQueue",
        "AddPermission",
        "RemovePermission",
    }
)
# Actions that address the service rather than a queue: SQS refuses them sent to a queue's URL
# with InvalidAction (recorded), while every other action may be (GetQueueUrl too, recorded).
SERVICE_ACTIONS = frozenset({"CreateQueue", "ListQueues"})
BATCH_ACTIONS = frozenset(
    action for action, (members, _) in ACTIONS.items() if "Entries" in members
)
_LIST_MEMBERS = frozenset(REQUEST_LISTS.values())
# Request: a map's query element -> the JSON map member.
_MAP_OF = {element: member for member, (element, _, _) in MAPS.items()}


def is_query(method: str, content_type: str, query: Mapping[str, str], has_target: bool) -> bool:
    """Whether a request speaks the query protocol (the JSON protocol always names a target)."""
    if has_target:
        return False
    return content_type == FORM_TYPE or "Action" in query or (method == "GET" and bool(query))


# --- requests ---------------------------------------------------------------------------------


def _tree(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """`A.1.B=x` pairs as nested dicts; a repeated key keeps its last value, as SQS does."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        if key.startswith(("X-Amz-", "x-amz-")):
            continue  # presigned-URL signature parameters
        *parents, leaf = key.split(".")
        node = root
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise invalid(f"The parameter {key[:100]} conflicts with {part[:100]}.")
            node = child
        if isinstance(node.get(leaf), dict):
            raise invalid(f"The parameter {key[:100]} conflicts with another parameter.")
        node[leaf] = value
    return root


def _ordered(node: Any, name: str) -> list[Any]:
    """The items of a `Name.N` group in N order; N counts from 1."""
    if node == "":
        return []  # a bare `Name=` is how query serializers send an empty list
    if not isinstance(node, dict):
        raise invalid(f"The parameter {name} must be given as {name}.N.")
    items: list[tuple[int, Any]] = []
    for index, value in node.items():
        number = whole_number(index)
        if number is None or number < 1:
            raise invalid(f"The parameter {name}.{index[:20]} has an invalid index.")
        items.append((number, value))
    return [value for _, value in sorted(items)]


def _scalar(name: str, value: Any) -> Any:
    if isinstance(value, dict):
        raise invalid(f"Unknown parameter {name}.{next(iter(value))[:100]}.")
    if name in INTEGERS:
        number = whole_number(value, signed=True)
        if number is None:
            raise invalid(
                f"Value {value[:100]} for parameter {name} is invalid. Reason: must be an integer."
            )
        return number
    return value


def _members(node: Mapping[str, Any], entry_element: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in node.items():
        if value == "" and (name in _LIST_MEMBERS or (entry_element and name == "Entries")):
            out[name] = []  # botocore sends an empty list as a bare `<JSON member>=`
        elif name in _MAP_OF:
            member = _MAP_OF[name]
            _, key_name, value_name = MAPS[member]
            out[member] = _map(value, name, key_name, value_name)
        elif name in REQUEST_LISTS:
            out[REQUEST_LISTS[name]] = [_scalar(name, item) for item in _ordered(value, name)]
        elif entry_element is not None and name == entry_element:
            out["Entries"] = [_members(_struct(item, name)) for item in _ordered(value, name)]
        else:
            out[name] = _scalar(name, value)
    return out


def _struct(node: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(node, dict):
        raise invalid(f"The parameter {name} must have members.")
    return node


def _map(node: Any, name: str, key_name: str, value_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in _ordered(node, name):
        entry = _struct(item, name)
        key = entry.get(key_name)
        if not isinstance(key, str):
            raise invalid(f"The parameter {name}.N.{key_name} is missing.")
        value = entry.get(value_name)
        out[key] = _members(value) if isinstance(value, dict) else value
    return out


def queue_path(path: str) -> bool:
    """Whether a request path is a queue's (`/<account>/<queue>`, or `/<region>/<account>/
    <queue>` for another region's) rather than the service's."""
    return path.strip("/").count("/") in (1, 2)


def decode(
    action: str, pairs: Iterable[tuple[str, str]], path: str, base_url: str
) -> dict[str, Any]:
    """The JSON members a query request stands for.

    Old clients address a queue by posting to its URL rather than passing QueueUrl; that URL is
    then the QueueUrl of an action that takes one. Other actions sent there (GetQueueUrl, the
    move-task actions) are served as if sent to the service; the caller refuses
    SERVICE_ACTIONS on a queue's URL before decoding.
    """
    tree = _tree(pairs)
    for name in ENVELOPE:
        tree.pop(name, None)
    entry_element = f"{action}RequestEntry" if action in BATCH_ACTIONS else None
    params = _members(tree, entry_element)
    if entry_element is not None:
        params.setdefault("Entries", [])  # an empty list may be left out: EmptyBatchRequest
    if action == "CreateQueue" and "Tags" in params:
        params["tags"] = params.pop("Tags")  # the one action whose JSON member is lower-case
    if "QueueUrl" not in params and "QueueUrl" in ACTIONS[action][0] and queue_path(path):
        params["QueueUrl"] = base_url.rstrip("/") + "/" + path.strip("/")
    return params


def action_of(pairs: Iterable[tuple[str, str]]) -> str | None:
    found = None
    for key, value in pairs:
        if key == "Action":
            found = value
    return found


# --- responses --------------------------------------------------------------------------------


def _escape(text: str) -> str:
    # A literal CR would reach the client as LF after XML end-of-line normalisation and break
    # the body's MD5, so it travels as a character reference, as SQS sends it.
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#xD;")
    )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return _escape(str(value))


def _render(name: str, value: Any, out: list[str], successful: str) -> None:
    """Append `value`, a JSON member called `name`, as SQS's XML elements."""
    if value is None:
        return
    if name in MAPS and isinstance(value, dict):
        element, key_name, value_name = MAPS[name]
        for key, item in value.items():
            out.append(f"<{element}><{key_name}>{_text(key)}</{key_name}>")
            _render(value_name, item, out, successful)
            out.append(f"</{element}>")
    elif isinstance(value, list):
        element = successful if name == "Successful" else LISTS.get(name, name)
        for item in value:
            _render(element, item, out, successful)
    elif isinstance(value, dict):
        out.append(f"<{name}>")
        for key, item in value.items():
            _render(key, item, out, successful)
        out.append(f"</{name}>")
    else:
        out.append(f"<{name}>{_text(value)}</{name}>")


def response(action: str, result: Mapping[str, Any], request_id: str) -> bytes:
    out = ['<?xml version="1.0"?>', f'<{action}Response xmlns="{XMLNS}">']
    if action not in NO_RESULT:
        members: list[str] = []
        for name, value in result.items():
            _render(name, value, members, f"{action}ResultEntry")
        # An empty result is one empty element, as SQS sends it (`<ReceiveMessageResult/>`).
        out += (
            [f"<{action}Result>", *members, f"</{action}Result>"]
            if members
            else [f"<{action}Result/>"]
        )
    out.append(f"<ResponseMetadata><RequestId>{_escape(request_id)}</RequestId></ResponseMetadata>")
    out.append(f"</{action}Response>")
    return "".join(out).encode()


def error_response(err: SqsError, request_id: str) -> bytes:
    kind = "Sender" if err.sender_fault else "Receiver"
    return (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{XMLNS}"><Error><Type>{kind}</Type>'
        f"<Code>{_escape(err.legacy_code)}</Code>"
        f"<Message>{_escape(err.query_message or err.message)}</Message>"
        f"<Detail/></Error><RequestId>{_escape(request_id)}</RequestId></ErrorResponse>"
    ).encode()
