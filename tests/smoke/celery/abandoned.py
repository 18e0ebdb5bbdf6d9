"""A Celery client that waits on okuri:// until it is killed, leaving its queue behind:
`python abandoned.py events` (an EventReceiver: a `celeryev.<uuid>` queue) or
`python abandoned.py inspect` (an `inspect ping` with nobody to answer: a reply queue).

Configured from SMOKE_* as smoke_app's workers are, with the queues' `expires` set to
SMOKE_QUEUE_EXPIRES_S, so that a test can SIGKILL it and watch its queue expire on okuri.
"""

from __future__ import annotations

import os
import sys

from smoke_app import app


def main(mode: str) -> None:
    expires_s = float(os.environ["SMOKE_QUEUE_EXPIRES_S"])
    app.conf.update(event_queue_expires=expires_s, control_queue_expires=expires_s)
    if mode == "events":
        with app.connection_for_read() as conn:
            app.events.Receiver(conn, handlers={"*": lambda event: None}).capture(limit=None)
    else:
        app.control.inspect(["nobody@smoke"], timeout=600).ping()


if __name__ == "__main__":
    main(sys.argv[1])
