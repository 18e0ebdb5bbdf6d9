"""boto3's SQS client as one node's client in `python -m bench cluster` (`--client boto3`).

Why: issue 28 was measured with boto3 clients, and a race may depend on what a client does
between and around its requests (its connection pool, how long it takes to send, when it
gives up), which the bench's light client (bench.sqs_client.BlockingSqs) does its own
way. This wraps a botocore client of one endpoint behind the light client's face, so the
failover caller (bench.failover) drives either: `call(action, params)` returns the
decoded answer, raises SqsCallError for an SQS error answer (a 5xx among them), and raises an
OSError for a request no node answered: ConnectionRefusedError for a refused connection,
TimeoutError for a connect or read timeout, ConnectionError for a dropped one. As in the
issue: retries={"max_attempts": 1} (one attempt, no retry of botocore's own), connect and read
timeouts as given. botocore spends about a millisecond of client CPU per call, which the
bench's process pays; the light client is the default for that reason.
"""

from __future__ import annotations

from typing import Any

from bench.servers import botocore_client
from bench.sqs_client import SqsCallError


class BotoSqs:
    """A botocore SQS client of one endpoint: one per thread and node, as BlockingSqs."""

    def __init__(
        self,
        endpoint: str,
        access_key_id: str,
        secret_access_key: str,
        region: str,
        read_timeout_s: float,
        connect_timeout_s: float,
    ) -> None:
        self._client = botocore_client(
            "sqs", endpoint, access_key_id, secret_access_key, region,
            connect_timeout_s, read_timeout_s, attempts=1, connections_max=2,
        )  # fmt: skip

    def close(self) -> None:
        self._client.close()

    def call(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        from botocore import xform_name
        from botocore.exceptions import (
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            HTTPClientError,
            ReadTimeoutError,
        )
        from botocore.exceptions import ConnectionError as BotoConnectionError

        method = getattr(self._client, xform_name(action))
        try:
            answer = method(**params)
        except ClientError as err:
            meta = err.response.get("ResponseMetadata") or {}
            error = err.response.get("Error") or {}
            raise SqsCallError(
                action,
                int(meta.get("HTTPStatusCode") or 0),
                str(error.get("Code") or "Unknown"),
                str(error.get("Message") or ""),
            ) from err
        except (ConnectTimeoutError, ReadTimeoutError) as err:  # before their base classes
            raise TimeoutError(str(err)) from err
        except EndpointConnectionError as err:
            raise ConnectionRefusedError(str(err)) from err
        except (HTTPClientError, BotoConnectionError) as err:  # closed or reset mid-request
            raise ConnectionError(str(err)) from err
        answer.pop("ResponseMetadata", None)
        return dict(answer)
