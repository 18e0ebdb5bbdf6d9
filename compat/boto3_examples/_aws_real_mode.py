"""A pytest plugin: run AWS's SDK example tests against a live endpoint instead of stubs.

The tests in AWS's public SDK example collection (python/example_code/...) are written to run
either on botocore stubs or against real AWS: each one goes through `make_stubber`, whose
stubbers take a `use_stubs` flag and, when it is false, let every call through to the service
and skip the stub-only assertions. The command-line switch that set it,
`--use-real-aws-may-incur-charges`, is still documented in the collection's test_tools README
but was dropped from its shared fixtures (they now always stub). This plugin gives the switch
back without touching the collection's files: with the option given, every stubber is made
with `use_stubs=False` and is neither activated nor deactivated, exactly as the collection's
fixtures did when they honoured it. With AWS_ENDPOINT_URL set, "real AWS" is okuri.

Load it with `-p compat.boto3_examples._aws_real_mode --use-real-aws-may-incur-charges`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

OPTION = "--use-real-aws-may-incur-charges"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        default=False,
        help="Let the example stubbers pass every call through to the service "
        "(the endpoint comes from AWS_ENDPOINT_URL).",
    )


@pytest.fixture(autouse=True)
def _stubbers_pass_through(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if not request.config.getoption(OPTION):
        yield
        return
    # Importable once the collection's conftest has put its `python` folder on sys.path.
    from test_tools.example_stubber import ExampleStubber

    stub_init = ExampleStubber.__init__

    def passthrough_init(self: Any, client: Any, use_stubs: bool = True) -> None:
        stub_init(self, client, use_stubs=False)

    monkeypatch.setattr(ExampleStubber, "__init__", passthrough_init)
    monkeypatch.setattr(ExampleStubber, "activate", lambda self: None)
    monkeypatch.setattr(ExampleStubber, "deactivate", lambda self: None)
    yield
