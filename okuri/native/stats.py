"""The native API's request counts for /metrics: by transport, operation and outcome.

An operation is a route's name (okuri/native/routes.py: `produce`, `lease`, ...; `unknown` for
a path or method nothing is routed to), an outcome `ok` or the error's code (`forbidden`,
`bad_json`, `overloaded`, ...), so every label takes a bounded set of values. One object may
serve several transports of the same operations, each counted under its own `transport`
label (`http`, `grpc`) in one metric family, `okuri_native_requests_total`, beside the SQS
surface's `okuri_sqs_requests_total`.
"""

from __future__ import annotations

UNKNOWN = "unknown"  # the operation of a request routed nowhere


class RequestStats:
    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, str], int] = {}

    def count(self, operation: str, outcome: str, transport: str = "http") -> None:
        key = (transport, operation, outcome)
        self.counts[key] = self.counts.get(key, 0) + 1

    def metric_lines(self) -> list[str]:
        """Prometheus lines: requests by transport, operation and outcome."""
        lines = [
            "# HELP okuri_native_requests_total Native API requests by transport, operation "
            "and outcome (ok or the error code).",
            "# TYPE okuri_native_requests_total counter",
        ]
        lines += [
            f'okuri_native_requests_total{{transport="{transport}",operation="{operation}",'
            f'outcome="{outcome}"}} {n}'
            for (transport, operation, outcome), n in sorted(self.counts.items())
        ]
        return lines
