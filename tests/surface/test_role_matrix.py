"""The role matrix, live: every operation x every role x a queue inside and outside the key's
namespace, over SQS and gRPC, against one real `okuri serve`, answers exactly allowed or the
surface's own denial (AccessDenied; PERMISSION_DENIED), as the one pure decision
(`okuri.principals.roles.decide`) says.

"Allowed" means anything but the denial: the queues named need not exist, since a request is
authorised before it runs (a consumer purging a missing queue hears AccessDenied, an admin
QueueDoesNotExist). Each surface's answers to all of its cells are gathered in one test, so
the whole matrix costs one server and a few hundred requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import pytest
from botocore.exceptions import ClientError

from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.principals.keyfile import create_access_key, create_key
from okuri.principals.roles import ROLES, Role, decide
from okuri.sqs.access import checks
from okuri.sqs.shapes import ACTIONS
from tests.grpc_calls import RPCS
from tests.servers import ServerProcess, start_server
from tests.sqs_examples import ACCOUNT_ID, request

NAMESPACE = "team-a-"
SIDES = {"inside": "team-a-jobs", "outside": "team-b-jobs"}


class Keys(NamedTuple):
    file: Path
    bearer: dict[Role, str]
    sqs: dict[Role, tuple[str, str]]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    path = tmp_path_factory.mktemp("matrix-keys") / "keys.json"
    bearer = {role: create_key(str(path), role, NAMESPACE)[0] for role in ROLES}
    sqs = {}
    for role in ROLES:
        made = create_access_key(str(path), role, NAMESPACE)
        sqs[role] = (made.access_key_id, made.secret_access_key)
    path.chmod(0o600)
    return Keys(path, bearer, sqs)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("matrix")
    env = {
        "OKURI_DATA_DIR": str(tmp / "data"),
        "OKURI_API_KEYS_FILE": str(keys.file),
        "OKURI_ACCOUNT_ID": ACCOUNT_ID,  # the account the example requests' URLs and ARNs name
    }
    server = start_server(tmp, env)
    yield server
    server.terminate()


def expected(operations: list[tuple[Any, str]], role: Role) -> str:
    return (
        "allowed"
        if all(decide(op, role, NAMESPACE, queue) == "allow" for op, queue in operations)
        else "denied"
    )


def test_every_sqs_action_for_every_role_in_and_out_of_the_namespace(
    server: ServerProcess, keys: Keys
) -> None:
    wrong: list[str] = []
    for role in ROLES:
        key, secret = keys.sqs[role]
        sqs = server.sqs_client(key, secret, retries={"total_max_attempts": 1})
        for action in sorted(ACTIONS):
            for side, queue in SIDES.items():
                params = request(action, queue)
                want = expected(checks(action, params), role)
                try:
                    sqs._make_api_call(action, params)
                    got = "allowed"
                except ClientError as err:
                    denied = err.response["Error"]["Code"] == "AccessDenied"
                    if denied:
                        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 403
                    got = "denied" if denied else "allowed"
                if got != want:
                    wrong.append(f"{role} {action} {side}: {got}, expected {want}")
    assert not wrong, "\n".join(wrong)


def test_every_grpc_call_for_every_role_in_and_out_of_the_namespace(
    server: ServerProcess, keys: Keys
) -> None:
    wrong: list[str] = []
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        for role in ROLES:
            metadata = (("authorization", f"Bearer {keys.bearer[role]}"),)
            for operation, rpc, build in RPCS:
                for side, queue in SIDES.items():
                    want = expected([(operation, queue)], role)
                    try:
                        getattr(stub, rpc)(build(queue), metadata=metadata, timeout=10)
                        got = "allowed"
                    except grpc.RpcError as err:
                        code = err.code()  # type: ignore[attr-defined]
                        got = "denied" if code == grpc.StatusCode.PERMISSION_DENIED else "allowed"
                    if got != want:
                        wrong.append(f"{role} {rpc} {side}: {got}, expected {want}")
    assert not wrong, "\n".join(wrong)
