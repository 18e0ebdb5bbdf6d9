"""Pointing unchanged application code at okuri through the AWS SDKs' own variables.

okuri cannot patch clients the way moto does; what it can do is set the variables every AWS
SDK reads (the endpoint, region and keys) and clear those that would win over them (a
profile, a session token), so that code building its own boto3 clients talks to okuri.
boto3 caches the credentials its default session found, so that session is dropped too.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from okuri.testing.server import AWS_CLEARED, OkuriServer


@contextlib.contextmanager
def aws_environ(server: OkuriServer) -> Iterator[dict[str, str]]:
    """Set the AWS_* variables of `server` (`OkuriServer.aws_environ`) and unset those in
    AWS_CLEARED until the block ends, then put back every one as it was."""
    changed = server.aws_environ()
    saved = {name: os.environ.get(name) for name in (*changed, *AWS_CLEARED)}
    boto3 = sys.modules.get("boto3")
    session = getattr(boto3, "DEFAULT_SESSION", None)
    try:
        os.environ.update(changed)
        for name in AWS_CLEARED:
            os.environ.pop(name, None)
        if boto3 is not None:
            setattr(boto3, "DEFAULT_SESSION", None)  # noqa: B010  # credentials found before
        yield changed
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        now = sys.modules.get("boto3")  # imported inside the block: its session is okuri's
        if now is not None:
            setattr(now, "DEFAULT_SESSION", session if now is boto3 else None)  # noqa: B010
