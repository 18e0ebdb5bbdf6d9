"""Where the admin commands reach okuri, with which key, and how a failure reads.

The server's address comes from `--url`, else OKURI_URL, else the address `okuri serve`
listens on by default; the key from `--key`, else OKURI_KEY, else OKURI_ADMIN_KEY (the admin
key the server itself may be started with), else, for a server on this machine, the published
development key that a server with no key configured accepts from loopback
(okuri.principals.local): so the README's commands run as written after `make serve`. Every
error of okuri.client becomes one line on
stderr and a non-zero exit, never a traceback: an operator reads what went wrong and where.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from okuri.client import (
    NO_RETRIES,
    AuthError,
    Client,
    ForbiddenError,
    NotFoundError,
    OkuriClientError,
    TransportError,
)
from okuri.principals.local import DEV_ADMIN_KEY, is_local_host

DEFAULT_URL = "http://127.0.0.1:8080"  # okuri serve's default listener (OKURI_LISTEN)
URL_ENV = "OKURI_URL"
KEY_ENVS = ("OKURI_KEY", "OKURI_ADMIN_KEY")
TIMEOUT_S = 30.0

# Exit codes: 0 done, 1 the server refused or could not be reached, 2 usage.
FAILED = 1
USAGE = 2


class Refused(Exception):
    """A command cannot run: its one-line reason, and the exit code."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def add_arguments(parser: argparse.ArgumentParser, inner: bool = False) -> None:
    """The connection and output flags; `inner`: a command's own copy of them, which leaves
    the value given before the command alone unless given again after it."""

    def flag(name: str, **kw: Any) -> None:
        if inner:
            kw["default"] = argparse.SUPPRESS
        parser.add_argument(name, **kw)

    flag("--url", help=f"the okuri server (default ${URL_ENV}, else {DEFAULT_URL}); grpc:// works")
    flag(
        "--key",
        help="a native API bearer key (default $OKURI_KEY, else $OKURI_ADMIN_KEY, else, for a "
        "server on this machine, the development key a server with no key configured accepts)",
    )
    flag("--json", action="store_true", help="print JSON, for scripts")


def open_client(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> Client:
    """A client of the server `args` and `env` name, with their key, else the development key
    for a server on this machine; Refused without a key for any other server.
    It does not retry: an operator sees a failure at once and runs the command again."""
    url = args.url or env.get(URL_ENV) or DEFAULT_URL
    key = args.key or next((env[k] for k in KEY_ENVS if env.get(k)), None)
    args.resolved_url = url
    args.dev_key = not key
    if not key:
        if not is_local_host(_host(url)):
            raise Refused(
                "no key: pass --key or set OKURI_KEY (or OKURI_ADMIN_KEY); the development "
                f"key is only for a server on this machine, and {url} is not",
                USAGE,
            )
        key = DEV_ADMIN_KEY
    return Client(url, key, timeout_s=TIMEOUT_S, retries=NO_RETRIES)


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def explain(err: OkuriClientError, url: str, what: str, dev_key: bool = False) -> str:
    """One line saying why a request about `what` (a queue, "the queues") failed; `dev_key`:
    no key was given, so the development key was sent."""
    if isinstance(err, TransportError):
        return f"cannot reach okuri at {url}: {err}"
    if isinstance(err, AuthError) and dev_key:
        return (
            f"the server at {url} refused the development key, sent because no key was given "
            f"({err}): pass --key or set OKURI_KEY (or OKURI_ADMIN_KEY)"
        )
    if isinstance(err, AuthError):
        return f"the server at {url} refused the key ({err})"
    if isinstance(err, ForbiddenError):
        return f"the key may not do this to {what} ({err})"
    if isinstance(err, NotFoundError):
        return f"{what} does not exist ({err.status} {err.code})"
    return str(err)


def report(message: str) -> None:
    print(f"okuri: error: {message}", file=sys.stderr)
