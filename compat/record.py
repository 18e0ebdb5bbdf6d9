"""Record each SDK client's scenarios against a fresh okuri: `python -m compat.record [client ...]`.

For every client in compat.clients.CLIENTS (or those named) and each of its scenarios (or the
one `--scenario` names): start a fresh `okuri serve` on the local store in a temporary directory
with a fixed key pair and run the client's program against it with OKURI_SCENARIO naming the
scenario. A Python client runs under vcrpy in its own interpreter (compat/vcr_record.py), which
records its HTTP into a cassette; any other program is pointed at a RecordingProxy in front of
okuri. If the program exits 0 and names itself and that scenario on its last stdout line, write
the vcrpy cassette compat/recordings/<client>.yaml (the client's first scenario, sqs-core) or
<client>.<scenario>.yaml, with the session's client, SDK version, scenario, protocols, date and
okuri version in its metadata. A program that is not installed or built is skipped with a
message saying what is missing; a failing run leaves its previous cassette in place. Exit
status: 0 if every client that could run recorded, 1 if one run failed, 2 if a client named on
the command line could not run (or does not run the scenario named).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from compat.cassette import CASSETTES, SUFFIX, Exchange, Recording, load_exchanges, save
from compat.clients import CLIENTS, ROOT, Client, select
from compat.proxy import RecordingProxy
from compat.server import ServerError, clean_environ, okuri_serve

# The key pair okuri is started with while recording; a cassette holds the access key id (in
# its Authorization headers) and signatures, never the secret. Fixed so re-recordings diff less.
RECORD_KEY, RECORD_SECRET = "AKIDOKURIRECORD", "okuri-record-secret"
REGION = "us-east-1"
PROGRAM_S = 180.0  # one scenario run, start-up of node or a JVM-free Go binary included
MARKER = "SCENARIO "


class RecordError(Exception):
    pass


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@contextmanager
def okuri_server(workdir: Path) -> Iterator[tuple[str, str]]:
    """A fresh `okuri serve` on 127.0.0.1; yields (its URL, its version). Stopped by its pid."""
    settings = {
        "OKURI_ACCESS_KEY_ID": RECORD_KEY,
        "OKURI_SECRET_ACCESS_KEY": RECORD_SECRET,
        "OKURI_REGION": REGION,
        "OKURI_LOG_LEVEL": "warning",
    }
    with okuri_serve(workdir, settings) as url:
        status, body = _get(url + "/")
        version = json.loads(body).get("version", "unknown") if status == 200 else "unknown"
        yield url, version


def program_env(client: Client, scenario: str, endpoint: str, home: Path) -> dict[str, str]:
    """The scenario program's environment: the contract in compat/clients/README.md."""
    return {
        **clean_environ(),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": RECORD_KEY,
        "AWS_SECRET_ACCESS_KEY": RECORD_SECRET,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "OKURI_SCENARIO_PREFIX": client.prefix,
        "OKURI_SCENARIO": scenario,
        # Keep a developer's ~/.aws profiles (retry modes, endpoints) out of the cassette.
        "AWS_CONFIG_FILE": str(home / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        **client.environ(),
    }


def parse_marker(stdout: str) -> dict[str, str]:
    """The `SCENARIO {json}` object on the program's last non-empty stdout line."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines or not lines[-1].startswith(MARKER):
        raise RecordError(f"the last stdout line is not `{MARKER}{{...}}`")
    try:
        marker = json.loads(lines[-1][len(MARKER) :])
    except json.JSONDecodeError as err:
        raise RecordError(f"the SCENARIO line is not JSON: {err}") from None
    if not isinstance(marker, dict) or not all(
        isinstance(marker.get(k), str) for k in ("client", "version", "scenario")
    ):
        raise RecordError(f"the SCENARIO line needs client, version and scenario: {marker}")
    return marker


async def _run_program(
    client: Client, argv: list[str], scenario: str, endpoint: str, home: Path
) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=ROOT,
        env=program_env(client, scenario, endpoint, home),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), PROGRAM_S)  # noqa: TID251
    except TimeoutError:
        proc.kill()  # this child only
        await proc.wait()
        raise RecordError(f"the program did not finish in {PROGRAM_S} s") from None
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def _run_recorded(
    client: Client, scenario: str, upstream: str, home: Path
) -> tuple[int, str, str, list[Exchange]]:
    """Run the program with its HTTP recorded: by vcrpy in its interpreter, or by the proxy."""
    if client.vcrpy:
        cassette = home / f"vcrpy{SUFFIX}"
        argv = client.vcrpy_argv(cassette)
        code, out, err = await _run_program(client, argv, scenario, upstream, home)
        # vcrpy writes nothing when no request was sent.
        return code, out, err, load_exchanges(cassette) if cassette.exists() else []
    async with RecordingProxy(upstream) as proxy:
        code, out, err = await _run_program(client, client.argv(), scenario, proxy.url, home)
        return code, out, err, proxy.exchanges


async def _record_async(
    client: Client, scenario: str, upstream: str, okuri_version: str, home: Path
) -> Recording:
    code, out, err, exchanges = await _run_recorded(client, scenario, upstream, home)
    if code != 0:
        tail = "\n".join((out + err).strip().splitlines()[-30:])
        raise RecordError(f"the program exited with {code}:\n{tail}{_last_exchange(exchanges)}")
    marker = parse_marker(out)
    if marker["client"] != client.name or marker["scenario"] != scenario:
        raise RecordError(
            f"the program says it is {marker['client']}/{marker['scenario']}, "
            f"expected {client.name}/{scenario}"
        )
    if not exchanges:
        raise RecordError("the program sent no requests that were recorded")
    return Recording(
        client=client.name,
        sdk_version=marker["version"],
        scenario=marker["scenario"],
        recorded=dt.datetime.now(dt.UTC).date().isoformat(),  # noqa: TID251
        okuri_version=okuri_version,
        exchanges=exchanges,
    )


def _last_exchange(exchanges: list[Exchange]) -> str:
    """The last request and answer, to see what the program sent when it failed."""
    if not exchanges:
        return "\n(no requests reached the proxy)"
    last = exchanges[-1]
    query = f"?{last.request.query}" if last.request.query else ""
    return (
        f"\nlast exchange ({len(exchanges) - 1}, {last.action}):\n"
        f"> {last.request.method} {last.request.path}{query}\n"
        f"> {last.request.body.decode(errors='replace')[:1000]}\n"
        f"< {last.response.status} {last.response.body.decode(errors='replace')[:1000]}"
    )


def record(client: Client, scenario: str, out_dir: Path = CASSETTES) -> tuple[Path, int]:
    """Run one of a client's scenarios, recorded, and write its cassette, and say how many
    exchanges it holds; RecordError (or ServerError, if okuri did not start) if not."""
    with tempfile.TemporaryDirectory(prefix=f"okuri-record-{client.name}-") as tmp:
        home = Path(tmp)
        with okuri_server(home) as (upstream, version):
            recording = asyncio.run(_record_async(client, scenario, upstream, version, home))
    path = out_dir / f"{client.recording_name(scenario)}{SUFFIX}"
    save(recording, path)
    return path, len(recording.exchanges)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.record", description=__doc__)
    parser.add_argument("clients", nargs="*", help=f"any of: {', '.join(CLIENTS)} (default all)")
    parser.add_argument("--out", type=Path, default=CASSETTES, help="cassettes directory")
    parser.add_argument("--scenario", help="record only this scenario (of the clients that run it)")
    args = parser.parse_args(argv)
    try:
        clients = select(args.clients)
    except ValueError as err:
        parser.error(str(err))
    failed, skipped = [], []
    for client in clients:
        scenarios = [s for s in client.scenarios if args.scenario in (None, s)]
        if not scenarios:
            if args.clients:
                print(f"skip {client.name}: it does not run {args.scenario}", flush=True)
                skipped.append(client.name)
            continue
        why = client.missing()
        if why is not None:
            print(f"skip {client.name}: {why}", flush=True)
            skipped.append(client.name)
            continue
        for scenario in scenarios:
            run = f"{client.name} {scenario}"
            print(f"record {run} ...", flush=True)
            try:
                path, count = record(client, scenario, args.out)
            except (RecordError, ServerError) as err:
                print(f"FAILED {run}: {err}", flush=True)
                failed.append(run)
                continue
            print(
                f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} "
                f"({count} exchanges)",
                flush=True,
            )
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    if skipped and args.clients:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
