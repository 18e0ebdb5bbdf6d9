"""`okuri.testing.serve()`: an okuri for a `with` block or a decorated function, as moto's
`mock_aws` is, for unittest and scripts; and the OKURI_TEST_* variables that send it (and the
pytest fixtures) to an okuri running elsewhere.
"""

from __future__ import annotations

import contextlib
import os
from types import TracebackType

from okuri.testing.environ import aws_environ
from okuri.testing.server import OkuriServer, external, in_process

# The variables that send `serve()` and the pytest fixtures to an okuri running elsewhere.
URL_ENV = "OKURI_TEST_URL"
ACCESS_KEY_ID_ENV = "OKURI_TEST_ACCESS_KEY_ID"
SECRET_ACCESS_KEY_ENV = "OKURI_TEST_SECRET_ACCESS_KEY"
ADMIN_KEY_ENV = "OKURI_TEST_ADMIN_KEY"
REGION_ENV = "OKURI_TEST_REGION"


def external_from_environ(url: str | None = None) -> OkuriServer | None:
    """The okuri at `url` (else the one OKURI_TEST_URL names), with the OKURI_TEST_* keys
    (else okuri's development pair); None when neither names one."""
    url = url or os.environ.get(URL_ENV, "").strip()
    if not url:
        return None
    return external(
        url,
        access_key_id=os.environ.get(ACCESS_KEY_ID_ENV),
        secret_access_key=os.environ.get(SECRET_ACCESS_KEY_ENV),
        admin_key=os.environ.get(ADMIN_KEY_ENV),
        region=os.environ.get(REGION_ENV),
    )


class Serving(contextlib.ContextDecorator):
    """`serve()`'s answer: enter it (`with`) or decorate a function with it."""

    def __init__(self, url: str | None, env: bool) -> None:
        self.url = url
        self.env = env
        self.server: OkuriServer | None = None
        self._stack: contextlib.ExitStack | None = None

    def _recreate_cm(self) -> Serving:
        """Each call of a decorated function gets an okuri of its own (calls may nest)."""
        return Serving(self.url, self.env)

    def __enter__(self) -> OkuriServer:
        if self._stack is not None:
            raise RuntimeError("this serve() is in use; call serve() again for another okuri")
        with contextlib.ExitStack() as stack:
            given = external_from_environ(self.url)
            if given is None:
                server = stack.enter_context(in_process())
            else:
                server = given
                server.reset()  # every serve() block starts from an empty okuri
            if self.env:
                stack.enter_context(aws_environ(server))
            self.server, self._stack = server, stack.pop_all()
        return server

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack, self._stack, self.server = self._stack, None, None
        if stack is not None:
            stack.close()


def serve(url: str | None = None, *, env: bool = True) -> Serving:
    """An okuri for a block or a decorated function: started in this process in memory, or
    the one at `url` (else OKURI_TEST_URL, with OKURI_TEST_* keys), emptied first.

    With `env` (the default), the block also sets the AWS_* variables that point boto3 and
    every other AWS SDK at it (endpoint, region, keys; a profile or session token unset), and
    puts them back after: how a decorated function, or code that builds its own clients,
    finds it. `env=False` leaves the environment alone; use the yielded `OkuriServer`."""
    return Serving(url, env)
