"""okuri's pytest plugin (the `pytest11` entry point `okuri`): fixtures that give a test a real
okuri, emptied before each test, and the options that send them to an okuri elsewhere.

pytest loads this module in every run of every project where okuri is installed, so importing
it costs nothing: no server, boto3 or httpx until a test asks for a fixture. The server is
started on first use, once per process (so once per pytest-xdist worker, each on its own
loopback ports, in memory), and stopped at the session's end.

Isolation: before each test that uses an okuri fixture, every queue and exchange is deleted,
ahead of that test's fixtures of any scope (so a module-scoped fixture of a shared module keeps
what it creates). Tests marked `okuri_shared` (usually a whole module, `pytestmark`) share
state with the module's other marked tests; the module still starts empty. docs/testing.md
tells more.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from okuri import testing
from okuri.testing import serving
from okuri.testing.server import AWS_CLEARED, OkuriServer, UrlInvalid

if TYPE_CHECKING:
    from okuri.client import Client

SERVER_FIXTURE = "okuri_server"
SHARED_MARKER = "okuri_shared"
RESET_INI = "okuri_reset"
RESET_CHOICES = ("test", "never")
KOMBU_MISSING = (
    "okuri:// needs okuri's kombu transport, the okuri_kombu package: from a checkout of "
    "okuri, pip install ./integrations/kombu"
)


class _Plan:
    """Which okuri this process's tests use, the one running, and the last reset's scope."""

    def __init__(
        self, external: OkuriServer | None, reset_each_test: bool, worker: str | None
    ) -> None:
        self.external = external
        self.reset_each_test = reset_each_test
        self.worker = worker  # this process's pytest-xdist worker id, if it is one
        self.server: OkuriServer | None = None
        self._last_scope: str | None = None

    def serving(self) -> Iterator[OkuriServer]:
        """The session's okuri: the external one, emptied, or one started here."""
        if self.external is not None:
            if self.reset_each_test:
                _reset(self.external)
            self.server = self.external
            try:
                yield self.external
            finally:
                self.server = None
            return
        with testing.in_process() as server:
            self.server = server
            try:
                yield server
            finally:
                self.server = None

    def before(self, item: pytest.Item) -> None:
        """Empty the server ahead of `item`, unless it shares its module's state."""
        if SERVER_FIXTURE not in getattr(item, "fixturenames", ()):
            return
        shared = item.get_closest_marker(SHARED_MARKER) is not None
        scope = item.nodeid.split("::", 1)[0] if shared else item.nodeid
        if scope == self._last_scope:
            return
        self._last_scope = scope
        if self.server is not None and self.reset_each_test:
            _reset(self.server)

    def describe(self) -> str:
        server = self.server or self.external
        if server is None:
            return "okuri: not started"
        where = "in this process, in memory" if server.in_process else "external"
        if self.worker is not None and server.in_process:
            where += f", xdist worker {self.worker}'s own"
        return (
            f"okuri endpoint: {server.endpoint_url} ({where}; region {server.region}; native "
            f"API {server.native_url}/v1/, gRPC {server.grpc_url})"
        )


_PLAN = pytest.StashKey[_Plan]()


def _reset(server: OkuriServer) -> None:
    try:
        server.reset()
    except Exception as err:
        pytest.fail(
            f"emptying the okuri at {server.endpoint_url} before the test failed: "
            f"{type(err).__name__}: {err}",
            pytrace=False,
        )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Keep pytest from rewriting the asserts of all of okuri in users' runs.

    pytest rewrites every package of a distribution that declares a pytest11 plugin, so
    without this each run would re-compile the server, engine and client (each run anew where
    bytecode is not cached: read-only site-packages, PYTHONDONTWRITEBYTECODE) to improve the
    messages of asserts that are not tests. pytest has no public way to unmark a package; this
    runs as the plugin registers, before anything of okuri beyond okuri.testing is imported."""
    marked = getattr(getattr(pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):
        marked.discard("okuri")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("okuri", "okuri (okuri.testing, docs/testing.md)")
    group.addoption(
        "--okuri-url",
        metavar="URL",
        help="use the okuri running at URL instead of starting one (env "
        f"{serving.URL_ENV}); every queue on it is deleted before each test",
    )
    group.addoption(
        "--okuri-access-key-id",
        metavar="KEY",
        help=f"its SQS access key id (env {serving.ACCESS_KEY_ID_ENV}; default okuri's "
        "development pair)",
    )
    group.addoption(
        "--okuri-secret-access-key",
        metavar="SECRET",
        help=f"its SQS secret (env {serving.SECRET_ACCESS_KEY_ENV})",
    )
    group.addoption(
        "--okuri-admin-key",
        metavar="KEY",
        help=f"its native API admin key, for okuri_client and okuri:// (env "
        f"{serving.ADMIN_KEY_ENV})",
    )
    group.addoption(
        "--okuri-region",
        metavar="REGION",
        help=f"the region to sign for (env {serving.REGION_ENV}; default us-east-1)",
    )
    parser.addini(
        RESET_INI,
        "when okuri is emptied: 'test' (before each test that uses it; the default) or "
        "'never' (tests keep what earlier tests left)",
        default="test",
    )


def _option(config: pytest.Config, name: str, env: str) -> str | None:
    value = config.getoption(name) or os.environ.get(env, "")
    return value.strip() or None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SHARED_MARKER}: the test shares okuri's queues with the other marked tests of its "
        "module (the module still starts from an empty okuri)",
    )
    reset = str(config.getini(RESET_INI)).strip().lower()
    if reset not in RESET_CHOICES:
        raise pytest.UsageError(
            f"{RESET_INI} = {reset!r}: expected one of {', '.join(RESET_CHOICES)}"
        )
    url = _option(config, "okuri_url", serving.URL_ENV)
    external = None
    if url is not None:
        try:
            external = testing.external(
                url,
                access_key_id=_option(config, "okuri_access_key_id", serving.ACCESS_KEY_ID_ENV),
                secret_access_key=_option(
                    config, "okuri_secret_access_key", serving.SECRET_ACCESS_KEY_ENV
                ),
                admin_key=_option(config, "okuri_admin_key", serving.ADMIN_KEY_ENV),
                region=_option(config, "okuri_region", serving.REGION_ENV),
            )
        except UrlInvalid as err:
            source = "--okuri-url" if config.getoption("okuri_url") else serving.URL_ENV
            raise pytest.UsageError(f"{source}: {err}") from None
        workers = getattr(config.option, "numprocesses", None)
        if workers and reset == "test" and not hasattr(config, "workerinput"):
            raise pytest.UsageError(
                f"--okuri-url with -n {workers}: every worker would empty the one okuri "
                "before each of its tests, deleting the queues of the others'. Leave out "
                "--okuri-url (each worker then starts its own okuri), or run without -n, or "
                f"set `{RESET_INI} = never` and give each test queues of its own"
            )
    workerinput = getattr(config, "workerinput", None)  # set by pytest-xdist on its workers
    worker = None if workerinput is None else str(workerinput.get("workerid", "?"))
    config.stash[_PLAN] = _Plan(external, reset == "test", worker)


def pytest_report_header(config: pytest.Config) -> str | None:
    plan = config.stash.get(_PLAN, None)
    if plan is None or plan.external is None:
        return None  # an okuri of its own starts only if a test asks for one
    return f"okuri: tests use the okuri at {plan.external.endpoint_url}"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    plan = item.config.stash.get(_PLAN, None)
    if plan is not None:
        plan.before(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    plan = item.config.stash.get(_PLAN, None)
    if report.failed and plan is not None and SERVER_FIXTURE in getattr(item, "fixturenames", ()):
        report.sections.append(("okuri", plan.describe()))


@pytest.fixture(scope="session")
def okuri_server(pytestconfig: pytest.Config) -> Iterator[OkuriServer]:
    """The session's okuri (this worker's, under xdist), emptied before each test."""
    yield from pytestconfig.stash[_PLAN].serving()


@pytest.fixture(scope="session")
def okuri_sqs(okuri_server: OkuriServer) -> Iterator[Any]:
    """A boto3 SQS client of okuri_server (shared by the session's tests: clients are
    stateless, and making one costs more than most tests)."""
    try:
        import boto3  # noqa: F401
    except ImportError:
        pytest.fail("okuri_sqs needs boto3: pip install 'okuri-queue[clients]'", pytrace=False)
    client = okuri_server.sqs_client()
    yield client
    client.close()


@pytest.fixture(scope="session")
def okuri_client(okuri_server: OkuriServer) -> Iterator[Client]:
    """okuri's native client (okuri.client.Client) of okuri_server, with its admin key."""
    try:
        client = okuri_server.native_client()
    except LookupError as err:
        pytest.fail(str(err), pytrace=False)
    with client:
        yield client


@pytest.fixture
def okuri_env(
    okuri_server: OkuriServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The AWS_* variables pointing every AWS SDK at okuri_server, set for the test (a
    profile or session token unset); boto3's default session is dropped before and after."""
    changed = okuri_server.aws_environ()
    for name, value in changed.items():
        monkeypatch.setenv(name, value)
    for name in AWS_CLEARED:
        monkeypatch.delenv(name, raising=False)
    boto3 = sys.modules.get("boto3")
    if boto3 is not None:
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    yield changed
    now = sys.modules.get("boto3")
    if now is not None and boto3 is None:  # imported by the test: its session is okuri's
        setattr(now, "DEFAULT_SESSION", None)  # noqa: B010


@pytest.fixture(scope="session")
def okuri_celery_config(okuri_server: OkuriServer) -> dict[str, Any]:
    """Celery's broker on okuri_server through kombu's SQS transport (sqs://; needs
    celery[sqs]): return it from your `celery_config` fixture."""
    return testing.celery_config(okuri_server, "sqs")


@pytest.fixture(scope="session")
def okuri_kombu_celery_config(okuri_server: OkuriServer) -> dict[str, Any]:
    """Celery's broker on okuri_server through okuri's own kombu transport (okuri://; needs
    okuri_kombu, else the test is skipped saying so)."""
    pytest.importorskip("okuri_kombu", reason=KOMBU_MISSING)
    try:
        return testing.celery_config(okuri_server, "okuri")
    except LookupError as err:
        pytest.fail(str(err), pytrace=False)
