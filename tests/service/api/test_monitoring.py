"""The `monitoring` profile: Prometheus scraping the API and Grafana with the provisioned dashboard.

The compose file must validate with and without the profile (`docker-compose config -q`, when
installed), the provisioning files must point at the API's metrics and at the dashboard, and
every metric a dashboard panel queries must be one that a running API's ``/metrics`` exports.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from prometheus_client.parser import text_string_to_metric_families

from service.api.app import create_app
from service.api.routes.metrics import router as metrics_router
from service.ingest.scraper import TOTAL_NAMES, Totals
from service.learn.scoring import Scoring
from service.learn.worker_parts import LoopFigures
from service.settings import Settings
from service.store.counters import WORKER_COUNTERS as COUNTERS
from service.store.perplexity import append_perplexity
from service.store.snapshot import publish_snapshot
from tests.service.conftest import Published, serve
from tests.support.compose import compose_config

ROOT = Path(__file__).resolve().parents[3]
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_GPU = ROOT / "docker-compose.gpu.yml"
COMPOSE_MULTI_GPU = ROOT / "docker-compose.multigpu.yml"
DEPLOY = ROOT / "deploy"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"
DASHBOARDS = DEPLOY / "grafana" / "dashboards"
DASHBOARD = DASHBOARDS / "streamlda.json"
PROFILE = "monitoring"
# What plain `docker compose up` starts, before and after the monitoring profile.
DEFAULT_SERVICES = {"redis", "scraper", "worker", "api"}
MONITORING_SERVICES = {"prometheus", "grafana"}
# Counters the worker's parts add to its snapshot beside COUNTERS (their ``shown``).
WORKER_EXTRA_COUNTERS = ("redis_retries", "heldout_docs", "unacked", "evals_waiting",
                         "scorer_restarts")  # fmt: skip
# Topic quality the dashboard must show.
REQUIRED_METRICS = {
    "streamlda_perplexity",
    "streamlda_topic_coherence",
    "streamlda_topic_diversity",
    "streamlda_topic_drift_bits",
    "streamlda_docs_per_second",
    "streamlda_rank_docs_per_second",
    "streamlda_queue_length",
    "streamlda_queue_pending",
    "streamlda_scrape_errors_total",
    "streamlda_http_request_duration_seconds_bucket",
}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def services() -> dict[str, Any]:
    spec: dict[str, Any] = load_yaml(COMPOSE)
    return dict(spec["services"])


def mounts(service: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Container path -> (host path or volume name, mode) of a service's short-form volumes."""
    out = {}
    for volume in service.get("volumes", []):
        source, target, *mode = volume.split(":")
        out[target] = (source, mode[0] if mode else "rw")
    return out


def container_port(service: dict[str, Any]) -> int:
    """The container side of a service's one published port."""
    (mapping,) = service["ports"]
    return int(str(mapping).rsplit(":", 1)[1])


# --- PromQL: the metric names an expression reads ---------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"([^"]*)"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_VARIABLES = re.compile(r"\$\{[^}]*\}|\$\w+")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NUMBERS = re.compile(r"(?<![\w:.])\d[\w.]*")  # 0.99, 1e3, durations such as 5m or 1h30m
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "inf", "nan",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects: its identifiers once strings, label matchers, ranges,
    Grafana variables, grouping clauses, numbers, keywords and function calls are gone."""
    names = set(_NAME_MATCHER.findall(expr))
    text = _STRING.sub('""', expr)
    for pattern in (_MATCHERS, _RANGES, _VARIABLES, _GROUPING, _NUMBERS):
        text = pattern.sub(" ", text)
    for match in _IDENTIFIER.finditer(text):
        word = match.group()
        is_call = text[match.end() :].lstrip().startswith("(")
        if not is_call and word.lower() not in _KEYWORDS:
            names.add(word)
    return names


def test_metric_names_strip_functions_matchers_and_clauses() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, route) (rate(x_seconds_bucket{route!="/a{b}"}'
        "[$__rate_interval]))) / on(route) group_left sum without (instance) "
        '(rate(y_total[5m] offset 1h30m)) > bool 1e3 and z unless {__name__="w"}'
    )
    assert metric_names(expr) == {"x_seconds_bucket", "y_total", "z", "w"}
    assert metric_names("time() - a_timestamp_seconds") == {"a_timestamp_seconds"}
    assert metric_names('sum by (kind) (increase(errors_total{kind=~"a|b"}[5m]))') == {
        "errors_total"
    }


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside rows included."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(panel title, PromQL expression) of every target."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def exported_family(name: str, types: dict[str, str]) -> str | None:
    """The family of ``types`` (family name -> type, as parsed from /metrics) whose series
    ``name`` is: a gauge's own name, a counter's ``_total``, a histogram's ``_bucket``, ``_sum``
    or ``_count``; None when /metrics exports no such series."""
    if types.get(name) in {"gauge", "unknown", "untyped"}:
        return name
    for suffix, kinds in (
        ("_total", {"counter"}),
        ("_bucket", {"histogram"}),
        ("_sum", {"histogram", "summary"}),
        ("_count", {"histogram", "summary"}),
    ):
        base = name.removesuffix(suffix)
        if base != name and types.get(base) in kinds:
            return base
    return None


def unknown_metrics(dashboard: dict[str, Any], exposition: str) -> dict[str, set[str]]:
    """Panel title -> the names its queries read that ``exposition`` does not export."""
    types = {family.name: family.type for family in text_string_to_metric_families(exposition)}
    unknown: dict[str, set[str]] = {}
    for title, expr in queries(dashboard):
        missing = {n for n in metric_names(expr) if exported_family(n, types) is None}
        if missing:
            unknown.setdefault(title, set()).update(missing)
    return unknown


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


# --- compose ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("profile", [None, PROFILE], ids=["default", "monitoring"])
@pytest.mark.parametrize(
    "files",
    [[COMPOSE], [COMPOSE, COMPOSE_GPU, COMPOSE_MULTI_GPU]],
    ids=["cpu", "multi-gpu"],
)
def test_compose_config_is_accepted_with_and_without_the_profile(
    files: list[Path], profile: str | None
) -> None:
    result = compose_config(files, profile)
    assert result.returncode == 0, result.stderr


def test_plain_up_starts_what_it_did_and_the_profile_adds_monitoring() -> None:
    spec = services()
    assert {name for name, s in spec.items() if "profiles" not in s} == DEFAULT_SERVICES
    assert {name for name, s in spec.items() if PROFILE in s.get("profiles", [])} == (
        MONITORING_SERVICES
    )
    assert set(spec) == DEFAULT_SERVICES | MONITORING_SERVICES
    for name in MONITORING_SERVICES:
        # a variable may name a local image (make compose-up); its default is pinned
        image = re.sub(r"^\$\{STREAMLDA_[A-Z]+_IMAGE:-(.+)\}$", r"\1", spec[name]["image"])
        assert re.fullmatch(r"(prom/prometheus|grafana/grafana):v?\d+\.\d+\.\d+", image), image
    assert "api" in spec["prometheus"]["depends_on"]
    assert "prometheus" in spec["grafana"]["depends_on"]


def test_monitoring_ports_bind_to_this_host_unless_the_operator_says_otherwise() -> None:
    spec = services()
    for name in MONITORING_SERVICES:
        (mapping,) = spec[name]["ports"]
        assert str(mapping).startswith("${STREAMLDA_MONITORING_BIND:-127.0.0.1}:"), mapping


def grafana_start(password: str | None) -> subprocess.CompletedProcess[str]:
    """Grafana's entrypoint as its container runs it (compose's ``$$`` unescaped), with
    ``true`` for Grafana itself, and ``password`` as the admin password compose passes."""
    shell, flag, script, program = services()["grafana"]["entrypoint"]
    environment = {"PATH": "/usr/bin:/bin"}
    if password is not None:
        environment["GF_SECURITY_ADMIN_PASSWORD"] = password
    assert program == "/run.sh"  # the image's own entrypoint, started once the check passes
    command = [shell, flag, script.replace("$$", "$"), "true"]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=10)


@pytest.mark.slow
def test_grafana_refuses_to_start_without_a_password_of_its_own() -> None:
    grafana = services()["grafana"]
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"] == "${STREAMLDA_GRAFANA_PASSWORD:-}"
    for password in (None, "", "admin"):
        refused = grafana_start(password)
        assert refused.returncode == 1 and "STREAMLDA_GRAFANA_PASSWORD" in refused.stderr
    started = grafana_start("a long passphrase")
    assert started.returncode == 0, started.stderr


def test_monitoring_mounts_the_repository_files_read_only() -> None:
    spec = services()
    for name in MONITORING_SERVICES:
        for target, (source, mode) in mounts(spec[name]).items():
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name}: {source} is not in the repository"
                assert mode == "ro", f"{name}: {target} must be read-only"
    prometheus = spec["prometheus"]
    config = next(a for a in prometheus["command"] if a.startswith("--config.file="))
    assert mounts(prometheus)[config.partition("=")[2]][0] == "./deploy/prometheus/prometheus.yml"
    grafana = mounts(spec["grafana"])
    assert grafana["/etc/grafana/provisioning"][0] == "./deploy/grafana/provisioning"


# --- provisioning ---------------------------------------------------------------------------------


def test_prometheus_scrapes_the_api_metrics_route() -> None:
    spec = services()
    api = spec["api"]
    (job,) = load_yaml(PROMETHEUS_CONFIG)["scrape_configs"]
    (route,) = metrics_router.routes
    assert job.get("metrics_path", "/metrics") == route.path  # type: ignore[attr-defined]
    port = container_port(api)
    assert str(port) == api["environment"]["STREAMLDA_PORT"]
    (static,) = job["static_configs"]
    assert static["targets"] == [f"api:{port}"]


def test_grafana_datasource_is_the_compose_prometheus() -> None:
    spec = services()
    (source,) = load_yaml(GRAFANA_PROVISIONING / "datasources" / "prometheus.yml")["datasources"]
    assert source["type"] == "prometheus" and source["uid"]
    assert source["url"] == f"http://prometheus:{container_port(spec['prometheus'])}"
    interval = load_yaml(PROMETHEUS_CONFIG)["global"]["scrape_interval"]
    assert source["jsonData"]["timeInterval"] == interval  # the floor of $__rate_interval


def test_grafana_loads_the_dashboard_from_its_mount() -> None:
    grafana = services()["grafana"]
    (provider,) = load_yaml(GRAFANA_PROVISIONING / "dashboards" / "streamlda.yml")["providers"]
    assert provider["type"] == "file"
    path = provider["options"]["path"]
    assert mounts(grafana)[path] == ("./deploy/grafana/dashboards", "ro")
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{path}/{DASHBOARD.name}" and DASHBOARD.is_file()


def test_dashboard_panels_query_the_provisioned_datasource() -> None:
    (source,) = load_yaml(GRAFANA_PROVISIONING / "datasources" / "prometheus.yml")["datasources"]
    board = dashboard()
    assert board["uid"] and board["schemaVersion"] >= 41 and board["id"] is None
    ids = [panel["id"] for panel in panels(board)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(board):
        if panel["type"] == "row":
            continue
        assert panel["targets"], f"{panel['title']}: no query"
        for item in (panel, *panel["targets"]):
            assert item["datasource"] == {"type": "prometheus", "uid": source["uid"]}
        assert all(target["expr"].strip() for target in panel["targets"])


def test_dashboard_shows_what_the_issue_asks_for() -> None:
    queried = {name for _, expr in queries(dashboard()) for name in metric_names(expr)}
    assert queried >= REQUIRED_METRICS, REQUIRED_METRICS - queried
    exprs = [expr for _, expr in queries(dashboard())]
    for quantile in ("0.5", "0.99"):
        assert any(e.startswith(f"histogram_quantile({quantile},") for e in exprs)


# --- every queried metric is exported ---------------------------------------------------------


def publish_everything(client: redis.Redis, settings: Settings, published: Published) -> None:
    """What a running pipeline leaves in Redis: a worker's snapshot with its real counters, two
    ranks and topic drift, a scored point with coherence and diversity, the scrapers' real
    counters with skipped articles and errors, and a stream entry."""
    shown = inspect.getsource(LoopFigures.shown) + inspect.getsource(Scoring.shown)
    for name in WORKER_EXTRA_COUNTERS:
        assert f'"{name}"' in shown, name
    counters = dict.fromkeys((*COUNTERS, *WORKER_EXTRA_COUNTERS), 1)
    snapshot = dataclasses.replace(
        published.snapshot,
        counters=counters,
        rank_docs_per_s=[6, 6.5],
        topic_drift=[0.01, 0.2, 0.03],  # one per topic of the fixture's K = 3
    )
    publish_snapshot(client, snapshot)
    point = dataclasses.replace(published.points[-1], coherence=0.12, diversity=0.8)
    append_perplexity(client, point, keep=100)
    totals = Totals(Counter(dict.fromkeys(TOTAL_NAMES, 3)), Counter(short=2), 1.5)
    scraper = {**totals.as_counters(), "error:http": 1, "updated_at": time.time()}
    client.hset(settings.queue.counters_key, mapping=scraper)
    client.xadd(settings.queue.stream, {"id": "1"})


@pytest.mark.slow
def test_every_dashboard_metric_is_exported_by_a_running_api(
    published: Published, redis_client: redis.Redis, settings: Settings
) -> None:
    publish_everything(redis_client, settings, published)
    with serve(create_app(settings)) as url:
        for path in ("healthz", "topics", "topics/0", "stats", "no-such-page"):
            try:
                urllib.request.urlopen(url + path, timeout=10).close()
            except urllib.error.HTTPError as error:
                assert error.code == 404, path
        with urllib.request.urlopen(url + "metrics", timeout=10) as response:
            exposition = response.read().decode()
    board = dashboard()
    assert list(queries(board)), "the dashboard has no query"
    unknown = unknown_metrics(board, exposition)
    assert not unknown, f"panels query metrics that /metrics does not export: {unknown}"

    # A panel querying a metric /metrics does not export is reported, name by name.
    bogus = copy.deepcopy(board)
    panel = copy.deepcopy(next(p for p in panels(bogus) if p["type"] == "timeseries"))
    panel.update(id=max(p["id"] for p in panels(bogus)) + 1, title="bogus")
    panel["targets"] = [
        {**panel["targets"][0], "expr": "rate(streamlda_no_such_metric_total[5m])"},
        {**panel["targets"][0], "expr": "streamlda_scrape_errors"},  # a counter's bare name
        {**panel["targets"][0], "expr": "streamlda_docs_seen_bucket"},  # a gauge's "bucket"
    ]
    bogus["panels"].append(panel)
    assert unknown_metrics(bogus, exposition) == {
        "bogus": {
            "streamlda_no_such_metric_total",
            "streamlda_scrape_errors",
            "streamlda_docs_seen_bucket",
        }
    }
