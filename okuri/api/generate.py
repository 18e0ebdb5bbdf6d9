"""Regenerate the native API's Python modules from its .proto: `make proto`, or
`python -m okuri.api.generate` from the repository root.

The modules are checked in (so neither a user nor the server needs grpcio-tools), and
tests/unit/test_grpc_generated.py runs `render` to fail when they no longer match the .proto.
grpcio-tools is pinned exactly in the dev extra, since another protoc may write other bytes.

protoc names modules by the .proto's path, and the .proto lives where its proto package
(`okuri.api.v1`) says, so the modules land in the Python package of the same name and import
each other from there as written: nothing is rewritten.
"""

from __future__ import annotations

import sys
import tempfile
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the directory holding the `okuri` package
PROTO = "okuri/api/v1/queue_service.proto"
HERE = ROOT / Path(PROTO).parent
STEM = "queue_service"
OUTPUTS = (f"{STEM}_pb2.py", f"{STEM}_pb2.pyi", f"{STEM}_pb2_grpc.py")
STUBS_IMPORT = f"from okuri.api.v1 import {STEM}_pb2 as"


class GenerateError(RuntimeError):
    """protoc refused the .proto, or wrote something this script does not expect."""


def render() -> dict[str, bytes]:
    """The generated modules, by file name, as they should be checked in."""
    from grpc_tools import protoc  # a dev tool: imported only when generating

    well_known = str(resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory(prefix="okuri-proto-") as out:
        code = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{ROOT}",
                f"-I{well_known}",
                f"--python_out={out}",
                f"--pyi_out={out}",
                f"--grpc_python_out={out}",
                str(ROOT / PROTO),
            ]
        )
        if code != 0:
            raise GenerateError(f"protoc exited {code} on {PROTO}")
        where = Path(out) / Path(PROTO).parent
        files = {name: (where / name).read_bytes() for name in OUTPUTS}
    if files[f"{STEM}_pb2_grpc.py"].decode().count(STUBS_IMPORT) != 1:
        raise GenerateError(f"the stubs no longer import their messages as {STUBS_IMPORT!r}")
    return files


def main() -> int:
    for name, data in render().items():
        (HERE / name).write_bytes(data)
        print(f"wrote {Path(PROTO).parent / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
