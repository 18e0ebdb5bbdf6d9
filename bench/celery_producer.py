"""One producer process of `python -m bench celery`: `python -m bench.celery_producer`.

Why a process: eight producers in one interpreter would share one GIL, and a Celery producer
is mostly Python; as processes they are eight web workers would be. The protocol, one JSON
line each way on stdin and stdout:

1. it reads {"config": AppConfig, "warmup_id": int, "first_id": int, "count": int,
   "limit_s": float}, builds the app, connects, and sends `add(warmup_id, warmup_id)` (the
   connection, the queue's declaration and the first publish are paid before timing);
2. it writes {"ready": true} and waits for a line: the go;
3. it sends `add(i, i)` for i in [first_id, first_id + count), stopping early at limit_s,
   and writes {"sent": n, "start_s": ..., "end_s": ...} (CLOCK_MONOTONIC seconds), or
   {"error": "..."}.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench.celery_tasks import TASK_NAME, AppConfig, make_app


def _say(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def run(order: dict[str, Any]) -> dict[str, Any]:
    app = make_app(AppConfig(**order["config"]))
    add = app.tasks[TASK_NAME]
    warmup_id = int(order["warmup_id"])
    add.apply_async((warmup_id, warmup_id))
    _say({"ready": True})
    if not sys.stdin.readline():
        return {"error": "no go: stdin closed"}
    first, count, limit_s = int(order["first_id"]), int(order["count"]), float(order["limit_s"])
    start_s = time.monotonic()
    deadline = start_s + limit_s
    sent = 0
    for i in range(first, first + count):
        add.apply_async((i, i))
        sent += 1
        if time.monotonic() > deadline:
            break
    end_s = time.monotonic()
    app.close()
    return {"sent": sent, "start_s": start_s, "end_s": end_s}


def main() -> int:
    try:
        result = run(json.loads(sys.stdin.readline()))
    except Exception as err:  # reported to the bench, which says which broker failed how
        _say({"error": f"{type(err).__name__}: {err}"})
        return 1
    _say(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
