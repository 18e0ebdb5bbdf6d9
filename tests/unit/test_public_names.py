"""The public names of `okuri`, `okuri.client`, `okuri.testing` and `okuri.engine`, pinned
(httpx's habit).

Each module's `__all__` must equal the literal list here, every name in it must import, and the
module must export no public name it does not list. Adding, removing or renaming a public name
is then a deliberate edit of this file, visible in review, never a side effect of a refactor.
"""

from __future__ import annotations

import importlib
import types
import typing

import pytest

PUBLIC: dict[str, list[str]] = {
    "okuri": ["__version__"],
    "okuri.client": [
        "AsyncClient",
        "AsyncGrpcTransport",
        "AsyncHttpTransport",
        "AsyncTransport",
        "AuthError",
        "BadRequestError",
        "Binding",
        "BrowsePage",
        "BrowsedItem",
        "Client",
        "ConflictError",
        "Exchange",
        "ExchangePage",
        "ForbiddenError",
        "GrpcTransport",
        "HttpTransport",
        "Item",
        "LeasedItem",
        "NO_RETRIES",
        "NotFoundError",
        "OPERATIONS",
        "OkuriClientError",
        "Operation",
        "OverloadedError",
        "PartialProduceError",
        "Queue",
        "QueueAttributes",
        "QueuePage",
        "QueueStats",
        "Request",
        "RetryPolicy",
        "RetryableError",
        "ServerError",
        "StdlibHttpTransport",
        "TooLargeError",
        "Transport",
        "TransportError",
        "UnavailableError",
    ],
    "okuri.testing": [
        "OkuriServer",
        "Serving",
        "UrlInvalid",
        "aws_environ",
        "celery_config",
        "external",
        "external_from_environ",
        "in_process",
        "serve",
    ],
    "okuri.engine": [
        "AckResult",
        "Admission",
        "Binding",
        "BodyReader",
        "Bounds",
        "BrowsePage",
        "Counts",
        "DEDUP_ID_ATTRIBUTE",
        "DeadLetterResult",
        "Delivery",
        "DestinationDoesNotExist",
        "EXCHANGE_NAME_RULE",
        "EXCHANGE_TYPES",
        "Engine",
        "ExchangeState",
        "ExchangeType",
        "FIFO_ID",
        "FIFO_ID_RULE",
        "FIFO_SETTINGS",
        "Gate",
        "Holding",
        "MOVE_TASK_ACTIVE",
        "MOVE_TASK_FAILED",
        "MOVE_TASK_RUNNING",
        "MessageState",
        "MessageView",
        "MoveTask",
        "MoveTaskActive",
        "MoveTaskNotFound",
        "NotADeadLetterQueue",
        "PeerClient",
        "PeerRequestInvalid",
        "PeerUnreachable",
        "QUEUE_NAME",
        "QueueAttrs",
        "QueueView",
        "Quotas",
        "Refused",
        "Routed",
        "SendRequest",
        "SendResult",
        "Ticket",
        "VisibilityResult",
        "caller",
        "content_dedup_id",
        "dead_letter_target",
        "dedup_key",
        "fifo_setting",
        "is_fifo_id",
        "is_fifo_name",
        "read_body",
        "sender_of",
        "validate_exchange_name",
        "validate_queue_name",
        "validate_routing_key",
        "validate_type",
    ],
}


def exported(module: types.ModuleType) -> set[str]:
    """The module's public attributes: names not starting with '_', less its own submodules
    (which importing anything under the package sets) and typing's helpers it imported for
    annotations (TYPE_CHECKING, Any)."""
    names = set()
    for name, value in vars(module).items():
        submodule = isinstance(value, types.ModuleType) and value.__name__.startswith(
            module.__name__ + "."
        )
        from_typing = name in vars(typing) and vars(typing)[name] is value
        # pytest's assertion rewriting adds @py_builtins and @pytest_ar to the modules it
        # rewrote: okuri's own package, as the distribution of a pytest plugin, is one of them.
        if not name.startswith(("_", "@")) and not submodule and not from_typing:
            names.add(name)
    return names


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_all_is_the_pinned_list(name: str) -> None:
    assert PUBLIC[name] == sorted(PUBLIC[name]), "keep the pinned list sorted"
    module = importlib.import_module(name)
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"
    assert sorted(module.__all__) == PUBLIC[name]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_listed_name_imports(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists names it does not have: {missing}"


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_no_public_name_is_left_out_of_all(name: str) -> None:
    module = importlib.import_module(name)
    extra = sorted(exported(module) - set(module.__all__))
    assert not extra, f"{name} exports names its __all__ does not list: {extra}"
