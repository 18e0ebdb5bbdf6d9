"""The web console in a real browser (Debian's headless chromium through selenium) against a
real `okuri serve`: a wrong key is refused, the right one shows the queues with their counts and
charts, browsing shows a dead letter and where it came from, a confirmed redrive moves it back
(read through boto3), the key goes only into Authorization headers, never into a URL, and the
page runs under its Content-Security-Policy without a violation. Without a key configured,
/console is any unknown path. Every wait is bounded; the driver quits in a finally."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from okuri.principals.keyfile import create_key
from tests.servers import (
    ServerProcess,
    create_with_dead_letter_queue,
    keyed_server,
    start_server,
)

ADMIN = "console-test-admin-key-0123456789"
WRONG = "not-the-key-at-all-0123456789"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT_S = 15.0

webdriver = pytest.importorskip("selenium.webdriver")
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("no chromium and chromedriver: `make chromium`", allow_module_level=True)

from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

# Headless, and no traffic but to the server on loopback: no updates, no sync, no lookups.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--window-size=1280,900",
)


@pytest.fixture
def readonly(tmp_path: Path) -> tuple[Path, str]:
    """A keys file holding one read-only key of the namespace `shop-`, and that key."""
    path = tmp_path / "keys.json"
    return path, create_key(str(path), "readonly", "shop-")[0]


@pytest.fixture
def server(tmp_path: Path, readonly: tuple[Path, str]) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path, ADMIN, readonly[0])
    yield proc
    proc.terminate()


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[WebDriver]:
    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium's driver manager: never download
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(WAIT_S)
        yield driver
    finally:
        driver.quit()


def until(driver: WebDriver, what: str, check: Callable[[WebDriver], Any]) -> Any:
    """Wait (bounded) for `check` to answer something true; fail naming `what`."""
    try:
        # The queues table is rebuilt on every refresh: an element found a moment ago may be gone.
        wait = WebDriverWait(
            driver, WAIT_S, 0.1, ignored_exceptions=(StaleElementReferenceException,)
        )
        return wait.until(check)
    except Exception as err:
        pytest.fail(f"{what} within {WAIT_S} s: {err!r}\n{driver.page_source[-3000:]}")


def cell(driver: WebDriver, queue: str, column: str) -> str:
    """One cell's text, read in one script call so a refresh between find and read cannot
    leave a stale element."""
    selector = f'#queues tr[data-queue="{queue}"] td.{column}'
    text = driver.execute_script(
        "const td = document.querySelector(arguments[0]); return td ? td.textContent : '';",
        selector,
    )
    return str(text).strip()


def click(driver: WebDriver, selector: str) -> None:
    """Click what `selector` finds, finding it again if a refresh replaced it meanwhile."""

    def clicked(d: WebDriver) -> bool:
        d.find_element(By.CSS_SELECTOR, selector).click()
        return True

    until(driver, f"clicked {selector}", clicked)


def dead_letter_one(sqs: Any) -> tuple[str, str]:
    """`orders` redriving to `orders-dlq` after one receive; one message dead-lettered there,
    two more waiting in `orders`."""
    pair = create_with_dead_letter_queue(sqs, "orders", 1)
    sqs.send_message(QueueUrl=pair.url, MessageBody="parcel for ada")
    deadline = time.monotonic() + WAIT_S
    while depth(sqs, pair.dlq) < 1:
        assert time.monotonic() < deadline, "the message was not dead-lettered"
        sqs.receive_message(QueueUrl=pair.url, VisibilityTimeout=0, WaitTimeSeconds=0)
    for body in ("parcel for grace", "parcel for edsger"):
        sqs.send_message(QueueUrl=pair.url, MessageBody=body)
    return pair.url, pair.dlq


def depth(sqs: Any, url: str) -> int:
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(got["Attributes"]["ApproximateNumberOfMessages"])


def requested_urls(driver: WebDriver) -> list[tuple[str, dict[str, str]]]:
    """Every request the page made: its URL and headers (chromium's performance log)."""
    out = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            request = message["params"]["request"]
            out.append((request["url"], request.get("headers", {})))
    return out


def test_console_logs_in_browses_and_redrives_a_dead_letter(
    server: ServerProcess, browser: WebDriver, tmp_path: Path
) -> None:
    sqs = server.sqs_client()
    url, dlq = dead_letter_one(sqs)
    page = server.url + "/console"
    browser.get(page)

    browser.find_element(By.ID, "key").send_keys(WRONG)
    browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
    refused = until(
        browser, "a wrong key refused", lambda d: d.find_element(By.ID, "login-error").text
    )
    assert "refused" in refused and "not valid" in refused
    assert not browser.find_element(By.ID, "app").is_displayed()

    browser.find_element(By.ID, "key").send_keys(ADMIN)
    browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
    until(browser, "orders shows two visible", lambda d: cell(d, "orders", "visible") == "2")
    assert cell(browser, "orders", "dead_lettered") == "1"
    assert cell(browser, "orders-dlq", "visible") == "1"
    charts = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((c) => c.getAttribute('class'));",
        '#queues tr[data-queue="orders"] svg polyline',
    )
    assert charts == ["depth", "sends", "deletes"]
    until(browser, "the keys table", lambda d: "admin-key" in d.find_element(By.ID, "keys").text)

    row = '#queues tr[data-queue="orders-dlq"]'
    click(browser, row + " button:nth-of-type(1)")
    until(
        browser,
        "the dead letter browsed",
        lambda d: d.find_elements(By.CSS_SELECTOR, "#messages td.source"),
    )
    item = browser.find_element(By.CSS_SELECTOR, "#messages tbody tr")
    assert item.find_element(By.CSS_SELECTOR, "td.source").text == "orders"
    assert item.find_element(By.CSS_SELECTOR, "td.body").text == "parcel for ada"
    assert item.find_element(By.CSS_SELECTOR, "td.state").text == "visible"
    assert item.find_element(By.CSS_SELECTOR, "td.attempts").text == "1"
    assert item.find_element(By.CSS_SELECTOR, "td.enqueued").text
    browser.save_screenshot(str(tmp_path / "console.png"))
    if target := os.environ.get("OKURI_CONSOLE_SCREENSHOT"):  # docs/images/console.png
        shutil.copyfile(tmp_path / "console.png", target)

    click(browser, row + " button.redrive")
    dialog = browser.find_element(By.ID, "confirm")
    until(browser, "the confirmation dialog", lambda d: dialog.is_displayed())
    assert "orders-dlq" in browser.find_element(By.ID, "confirm-text").text
    browser.find_element(By.ID, "confirm-ok").click()
    until(
        browser, "the redrive reported", lambda d: "Moved 1" in d.find_element(By.ID, "notice").text
    )
    deadline = time.monotonic() + WAIT_S
    while (depth(sqs, url), depth(sqs, dlq)) != (3, 0):
        assert time.monotonic() < deadline, (depth(sqs, url), depth(sqs, dlq))
        time.sleep(0.1)
    until(browser, "orders shows three visible", lambda d: cell(d, "orders", "visible") == "3")

    purge = '#queues tr[data-queue="orders"] button.purge'
    click(browser, purge)
    until(browser, "the purge dialog", lambda d: dialog.is_displayed())
    browser.find_element(By.ID, "confirm-cancel").click()
    until(browser, "the dialog closed", lambda d: not dialog.is_displayed())
    assert depth(sqs, url) == 3  # cancelled: nothing purged
    click(browser, purge)
    until(browser, "the purge dialog", lambda d: dialog.is_displayed())
    browser.find_element(By.ID, "confirm-ok").click()
    until(
        browser,
        "the purge reported",
        lambda d: "Purged orders" in d.find_element(By.ID, "notice").text,
    )
    until(browser, "orders shows none visible", lambda d: cell(d, "orders", "visible") == "0")
    assert depth(sqs, url) == 0

    requests = requested_urls(browser)
    assert any("/v1/queues" in u for u, _ in requests), requests
    assert all(ADMIN not in u for u, _ in requests), requests
    assert ADMIN not in browser.current_url
    api = [h for u, h in requests if "/v1/" in u or "/console/api/" in u]
    sent = [h.get("Authorization") for h in api]
    assert sent[0] == f"Bearer {WRONG}" and set(sent[1:]) == {f"Bearer {ADMIN}"}, sent
    violations = [
        e for e in browser.get_log("browser") if "Content Security Policy" in e["message"]
    ]
    assert violations == []


def test_console_is_served_with_a_strict_policy_and_right_types(server: ServerProcess) -> None:
    for path, ctype in (
        ("/console", "text/html"),
        ("/console/console.js", "text/javascript"),
        ("/console/console.css", "text/css"),
    ):
        got = server.request("GET", path)
        assert got.status == 200, path
        assert got.headers["content-type"].startswith(ctype), got.headers
        csp = got.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
    page = server.request("GET", "/console").text
    assert "<script>" not in page and " on" + "click=" not in page


def test_console_reads_check_the_bearer_key_role_and_namespace(
    server: ServerProcess, readonly: tuple[Path, str]
) -> None:
    def get(path: str, key: str | None) -> tuple[int, Any]:
        headers = {} if key is None else {"Authorization": f"Bearer {key}"}
        got = server.request("GET", path, headers=headers)
        return got.status, json.loads(got.body)

    assert get("/console/api/keys", None)[0] == 401
    assert get("/console/api/keys", "wrong-key-0123456789-0123456789")[0] == 401
    status, doc = get("/console/api/keys", ADMIN)
    assert (
        status == 200
        and {"id": "admin-key", "kind": "bearer (environment)", "role": "admin", "namespace": ""}
        in doc["keys"]
    )
    assert ADMIN not in json.dumps(doc)
    assert get("/console/api/history?queue=nope", None)[0] == 401
    status, doc = get("/console/api/history?queue=nope", ADMIN)
    assert (status, doc) == (200, {"queue": "nope", "samples": []})
    key = readonly[1]
    assert get("/console/api/history?queue=shop-orders", key)[0] == 200
    status, doc = get("/console/api/history?queue=orders", key)
    assert (status, doc["error"]["code"]) == (403, "forbidden"), doc
    status, doc = get("/console/api/keys", key)
    assert (status, doc["error"]["code"]) == (403, "forbidden"), doc
    status, doc = get("/console/api/keys", ADMIN)
    [row] = [r for r in doc["keys"] if r["kind"] == "bearer"]
    assert (row["role"], row["namespace"]) == ("readonly", "shop-")
    assert key not in json.dumps(doc)


def test_console_is_an_unknown_path_without_a_key_to_enter(tmp_path: Path) -> None:
    """Authentication off and no key configured. (With nothing configured and authentication
    on, the development key enters: tests/surface/test_dev_key.py.)"""
    env = {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_AUTH": "off"}
    proc = start_server(tmp_path, env)
    try:
        unknown = proc.request("GET", "/no-such-page")
        for path in ("/console", "/console/console.js", "/console/api/keys"):
            got = proc.request("GET", path)
            assert (got.status, got.body) == (404, unknown.body) == (404, got.body), path
    finally:
        proc.terminate()
