"""deploy/: the Prometheus alert rules and the Grafana dashboard hold against what okuri really
exports. promtool checks the rules and runs their unit tests, and parses every dashboard query;
a real `okuri serve`, after a little traffic, exports every metric the queries name; and every
label value they match on is one okuri's code writes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.servers import ServerProcess, start_server

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "okuri-alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "okuri-alerts.test.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "okuri-dashboard.json"
ADMIN = "deploy-test-admin-key-0123456789abcdef"
PROMTOOL_S = 60.0
# Series Prometheus makes itself for each target, not okuri's; and labels the deployment sets.
PROMETHEUS_OWN = {"up"}
DEPLOYMENT_LABELS = {"job", "instance"}
# Grafana's variables, as a dashboard query would see them once expanded.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__range": "1h", "$instance": ".*", "$queue": ".*"}

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_VARIABLES = re.compile(r"\$\{?\w+\}?")
_LABEL_VALUES = re.compile(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,[^)]*\)")
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "inf", "nan",
}  # fmt: skip
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or Grafana's label_values) reads: what is left
    once strings, label matchers, ranges, groupings, variables, functions, keywords and
    numbers are taken out."""
    text = _LABEL_VALUES.sub(r"\1", expr)
    for pattern in (_STRINGS, _MATCHERS, _RANGES, _GROUPING, _VARIABLES):
        text = pattern.sub(" ", text)
    names = set()
    for found in _IDENT.finditer(text):
        if text[found.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        if found.group().lower() not in _KEYWORDS:
            names.add(found.group())
    return names


def matched_values(expr: str) -> set[tuple[str, str]]:
    """(label, value) for each literal alternative the expression's matchers name."""
    out = set()
    for label, _, value in _MATCHER.findall(expr):
        if "$" in value:
            continue
        for alternative in value.split("|"):
            plain = alternative.replace(".+", "").replace(".*", "")
            if plain:
                out.add((label, plain))
    return out


def test_metric_names_skip_functions_labels_keywords_and_numbers() -> None:
    expr = (
        'sum by (queue, state) (rate(okuri_a_total{event=~"x|y", le="0.5"}[5m] offset 1h))'
        " / on (instance) group_left (version) okuri_b > bool 1e3"
        ' and okuri_c{job="okuri_d"} unless okuri:e * $__range'
    )
    assert metric_names(expr) == {"okuri_a_total", "okuri_b", "okuri_c", "okuri:e"}
    assert metric_names("label_values(okuri_up, instance)") == {"okuri_up"}
    assert matched_values(expr) == {
        ("event", "x"),
        ("event", "y"),
        ("le", "0.5"),
        ("job", "okuri_d"),
    }


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def rule_exprs() -> list[str]:
    return [rule["expr"] for rule in rules()]


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def dashboard_exprs() -> list[str]:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in _panels(doc["panels"]) for t in p.get("targets", [])]
    for variable in doc["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            exprs.append(query["query"])
    return exprs


def test_the_dashboard_is_well_formed() -> None:
    doc = json.loads(DASHBOARD.read_text())
    panels = list(_panels(doc["panels"]))
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"])
    assert len(dashboard_exprs()) >= 15


# --- promtool -------------------------------------------------------------------------------


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed: `make promtool` (Debian's prometheus package)")
    return found


def run_promtool(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=PROMTOOL_S
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_alert_rules_pass_promtool_and_their_unit_tests() -> None:
    checked = run_promtool("check", "rules", RULES.name, cwd=RULES.parent)
    assert f"SUCCESS: {len(rule_exprs())} rules found" in checked
    assert "SUCCESS" in run_promtool("test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)


def test_every_alert_has_a_unit_test_that_sees_it_quiet_and_firing() -> None:
    seen: dict[str, set[bool]] = {rule["alert"]: set() for rule in rules()}
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            seen.setdefault(check["alertname"], set()).add(bool(check["exp_alerts"]))
    assert {alert: ways for alert, ways in seen.items() if ways != {False, True}} == {}


def test_every_dashboard_query_parses_as_promql(tmp_path: Path) -> None:
    """Each query, its Grafana variables expanded, as a recording rule promtool parses."""
    rules = []
    for n, expr in enumerate(e for e in dashboard_exprs() if not e.startswith("label_values")):
        for variable, value in sorted(GRAFANA_VARIABLES.items(), key=lambda kv: -len(kv[0])):
            expr = expr.replace(variable, value)
        assert "$" not in expr, expr
        rules.append({"record": f"okuri:dashboard_query_{n}", "expr": expr})
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert f"SUCCESS: {len(rules)} rules found" in run_promtool(
        "check", "rules", str(path), cwd=tmp_path
    )


# --- against a real server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("deploy")
    proc = start_server(tmp, {"OKURI_DATA_DIR": str(tmp / "data"), "OKURI_ADMIN_KEY": ADMIN})
    yield proc
    proc.terminate()


def exported(text: str) -> dict[str, float]:
    """Each sample's name and labels (as written) -> its value, from a /metrics exposition."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            samples[series] = float(value)
    return samples


def test_every_metric_the_rules_and_dashboard_read_is_exported(server: ServerProcess) -> None:
    sqs = server.sqs_client()
    url = sqs.create_queue(QueueName="deploy-check")["QueueUrl"]
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}]
    )
    auth = {"Authorization": f"Bearer {ADMIN}"}
    assert server.request("GET", "/v1/queues/deploy-check", None, auth).status == 200
    # A receive adopts the batch's slot into the manifest; its leases run out and both show.
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=1)
    assert len(got["Messages"]) == 2
    time.sleep(1.5)
    samples = exported(server.get("/metrics").text)
    names = {series.partition("{")[0] for series in samples}
    wanted = set().union(*map(metric_names, rule_exprs() + dashboard_exprs()))
    assert wanted - PROMETHEUS_OWN <= names, sorted(wanted - PROMETHEUS_OWN - names)
    assert len(wanted) >= 10
    age = 'okuri_queue_oldest_message_age_seconds{queue="deploy-check"}'
    assert 1.5 <= samples[age] < 30
    assert samples['okuri_queue_messages{queue="deploy-check",state="visible"}'] == 2
    assert samples["okuri_ready"] == 1
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60)
    assert len(got["Messages"]) == 2
    assert exported(server.get("/metrics").text)[age] == 0  # none visible: both in flight


def test_every_label_value_matched_is_one_okuri_writes() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "okuri").rglob("*.py"))
    for expr in rule_exprs() + dashboard_exprs():
        for label, value in matched_values(expr):
            if label in DEPLOYMENT_LABELS:
                continue
            assert f'"{value}' in source or f'{value}"' in source, (label, value, expr)
