"""Laravel smoke fixtures: the smoke app beside this file, runnable, and where a run keeps its
files so that the working copy stays untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat.clients import CLIENTS, Client, laravel_sdk_missing


@pytest.fixture(scope="module")
def laravel() -> Client:
    """The smoke app, runnable: skip without the SDK (as the other clients of ../shared do),
    fail if PHP is missing."""
    sdk = laravel_sdk_missing()
    if sdk is not None:
        pytest.skip(f"Laravel's SQS driver cannot run live here: {sdk}")
    client = CLIENTS["laravel"]
    missing = client.missing()
    if missing is not None:
        pytest.fail(f"laravel cannot run: {missing}; run `make clients`", pytrace=False)
    return client


@pytest.fixture
def laravel_env(tmp_path: Path) -> dict[str, str]:
    """The variables that move the app's storage (logs, the run log), its SQLite database and
    Laravel's bootstrap caches into `tmp_path`."""
    storage = tmp_path / "storage"
    (storage / "logs").mkdir(parents=True)
    return {
        "LARAVEL_STORAGE_PATH": str(storage),
        "DB_DATABASE": str(tmp_path / "smoke.sqlite"),
        "APP_SERVICES_CACHE": str(tmp_path / "services.php"),
        "APP_PACKAGES_CACHE": str(tmp_path / "packages.php"),
    }
