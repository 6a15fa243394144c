"""``streamlda up`` end to end: embedded Redis, scraper, worker and API as real processes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from service.learn.model_store import CHECKPOINT_NAME
from tests.service.learn.helpers import DEADLINE_S, REPO, WORKER_ENV, checkpoint_docs, wait_until
from tests.support.corpora import SHARDS
from tests.support.redis_server import free_port

pytestmark = pytest.mark.slow

TOPICS = int(WORKER_ENV["STREAMLDA_TOPICS"])
UP_ENV = {
    **WORKER_ENV,
    "STREAMLDA_STREAM_HIGH_WATER": "100",
    "STREAMLDA_CHECKPOINT_EVERY_S": "1",
    "STREAMLDA_STOP_TIMEOUT_S": "30",
    "STREAMLDA_RESTART_DELAY_FIRST_S": "0.5",
}


def get(port: int, path: str) -> tuple[int, Any]:
    """(status, body) of GET ``path``; the body parsed when it is JSON."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            status, raw, kind = reply.status, reply.read(), reply.headers["content-type"]
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers["content-type"]
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, None
    return status, json.loads(raw) if "json" in (kind or "") else raw.decode()


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def started_pids(output: str) -> list[int]:
    """The pid of every child ``up`` reported starting (redis, worker, api, scraper)."""
    return [int(m) for m in re.findall(r"started \w+ \(pid (\d+)\)", output)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start_up(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **UP_ENV}
    env.pop("STREAMLDA_REDIS_URL", None)
    command = [
        sys.executable,
        "-m",
        "service",
        "up",
        "--source",
        f"jsonl:{SHARDS[0]}",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
    ]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop_up(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


def two_points(port: int) -> bool:
    status, body = get(port, "/perplexity")
    return status == 200 and len(body["history"]) >= 2


def test_up_serves_topics_and_perplexity_then_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    data_dir, port, log = tmp_path / "data", free_port(), tmp_path / "up.log"
    up = start_up(data_dir, port, log)
    try:
        wait_until(lambda: up.poll() is not None or two_points(port), "two perplexity points")
        assert up.poll() is None, log.read_text()
        wait_until(lambda: get(port, "/topics")[1]["quality_docs"], "per-topic coherence")
        status, topics = get(port, "/topics?top=5")
        assert status == 200
        assert set(topics) == {
            "docs_seen", "updated_at", "sampler", "estimate", "quality_docs", "topics",
            "relevance",
        }  # fmt: skip
        # The worker's record: every topic has a size and a suggested name.
        assert all(t["size"] is not None and t["suggested_name"] for t in topics["topics"])
        assert topics["estimate"] == "mean"
        assert [t["id"] for t in topics["topics"]] == list(range(TOPICS))
        assert all(
            len(t["words"]) == 5 and set(t["words"][0]) == {"word", "weight"}
            for t in topics["topics"]
        )
        assert all(-1 <= t["coherence"] <= 1 for t in topics["topics"])
        status, ranked = get(port, "/topics?top=5&sort=coherence&uncertainty=true")
        coherence = [t["coherence"] for t in ranked["topics"]]
        assert status == 200 and coherence == sorted(coherence, reverse=True)
        words = [w for t in ranked["topics"] for w in t["words"]]
        # The lazy chain is sampled at the words last published: a word new to the top words
        # has no interval (null) until two samples held it.
        held = [w for w in words if w["low"] is not None]
        assert held and all(0 <= w["low"] <= w["high"] <= 1 for w in held)
        status, one = get(port, "/topics/2?top=3")
        assert status == 200 and one["id"] == 2 and len(one["words"]) == 3
        assert get(port, f"/topics/{TOPICS}")[0] == 404
        status, perplexity = get(port, "/perplexity")
        assert set(perplexity) == {"latest", "history"}
        assert set(perplexity["history"][0]) == {
            "docs_seen",
            "perplexity",
            "perplexity_avg",
            "coherence",
            "diversity",
            "at",
            "vocab_version",
        }
        assert -1 <= perplexity["history"][0]["coherence"] <= 1
        assert 0 < perplexity["history"][0]["diversity"] <= 1
        status, stats = get(port, "/stats")
        assert status == 200 and stats["topics"] == TOPICS and stats["docs_seen"] > 0
        assert stats["sampler"] == "scir" and stats["device"] == "cpu"
        assert {"length", "pending"} <= set(stats["queue"]) and stats["scraper"]["queued"] > 0
        assert stats["worker"]["updates"] > 0
        assert stats["checkpoint_at"] is not None  # the vocabulary's checkpoint at least
        wait_until(lambda: get(port, "/readyz")[0] == 200, "/readyz")
        status, metrics = get(port, "/metrics")
        assert status == 200 and "streamlda_docs_seen " in metrics
        assert "streamlda_perplexity" in metrics and "streamlda_topic_coherence " in metrics
    finally:
        code = stop_up(up)
    output = log.read_text()
    assert code == 0, output
    assert len(started_pids(output)) == 4 and "crashed" not in output
    assert "checkpoint (stop)" in output and "worker exited with code 0" in output
    # A child stopped on purpose is not reported as an exit by a signal.
    assert "api stopped" in output and "code -15" not in output, output
    assert not listening(port), "the API is gone"
    for pid in started_pids(output):
        assert not alive(pid), f"child {pid} still runs after up exited"
    assert (data_dir / CHECKPOINT_NAME).exists() and (data_dir / "redis").is_dir()
    config = (data_dir / "redis" / "redis.conf").read_text()
    password = config.split("requirepass ")[1].split()[0].strip('"')
    assert len(password) >= 32 and password not in output
    assert "started redis (pid" in output and " at redis://:***@127.0.0.1:" in output
    stopped_at = checkpoint_docs(data_dir)
    assert stopped_at > 0

    again = start_up(data_dir, port, tmp_path / "again.log")
    try:
        wait_until(lambda: again.poll() is not None or get(port, "/stats")[0] == 200, "restart")
        wait_until(lambda: "resumed from" in (tmp_path / "again.log").read_text(), "a resume")
        status, stats = get(port, "/stats")
        assert stats["docs_seen"] >= stopped_at
    finally:
        assert stop_up(again) == 0


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """(status, parsed JSON body) of POST ``path``."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0, None


INFER_TEXT = (
    "The river flows through the old city; its bridge, built in the nineteenth century by the "
    "railway company, carries trains to the harbour and the cathedral. José visited Kraków."
)


def test_up_serves_through_vocabulary_changes_without_an_error(tmp_path: Path) -> None:
    """Refreshing every 40 documents, every read answers, and /infer encodes each text with the
    words of the model it used: one vocabulary version, one token count for the same text."""
    data_dir, port, log = tmp_path / "data", free_port(), tmp_path / "up.log"
    UP_ENV["STREAMLDA_VOCAB_REFRESH"] = "40"
    try:
        up = start_up(data_dir, port, log)
    finally:
        del UP_ENV["STREAMLDA_VOCAB_REFRESH"]
    statuses: dict[str, list[int]] = {}
    answers: dict[int, set[int]] = {}
    try:

        def served() -> bool:
            return up.poll() is not None or post(port, "/infer", {"text": INFER_TEXT})[0] == 200

        wait_until(served, "a first model")  # before it, 503s say there is none yet

        def poll() -> bool:
            for path in ("/topics?top=5", "/stats", "/perplexity"):
                statuses.setdefault(path, []).append(get(port, path)[0])
            status, answer = post(port, "/infer", {"text": INFER_TEXT})
            statuses.setdefault("/infer", []).append(status)
            if status == 200:
                answers.setdefault(answer["vocab_version"], set()).add(answer["tokens"])
            return up.poll() is not None or len(answers) >= 3

        wait_until(poll, "three vocabularies served")
        assert up.poll() is None, log.read_text()
        # The views the API serves follow the snapshot within a refresh of theirs.
        wait_until(lambda: get(port, "/stats")[1]["vocab_version"] >= 2, "/stats to follow")
        assert get(port, "/stats")[1]["worker"]["vocab_refreshes"] >= 2
        history = get(port, "/perplexity")[1]["history"]
        versions = [p["vocab_version"] for p in history]
        assert versions == sorted(versions) and versions[0] == 0
    finally:
        code = stop_up(up)
    output = log.read_text()
    assert code == 0 and "crashed" not in output, output
    for path, seen in statuses.items():  # 503 says "nothing yet" until a first answer
        served = seen[seen.index(200) :]
        assert not [s for s in served if s >= 500], (path, seen)
    assert all(len(tokens) == 1 for tokens in answers.values()), answers


def test_a_killed_worker_is_restarted_and_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    """kill -9 of the worker: ``up`` keeps running, says so, and starts it again; the API
    answers throughout and docs_seen never falls below the checkpoint it resumes from."""
    data_dir, port, log = tmp_path / "data", free_port(), tmp_path / "up.log"
    up = start_up(data_dir, port, log)
    try:
        wait_until(
            lambda: (data_dir / CHECKPOINT_NAME).exists() and get(port, "/stats")[0] == 200,
            "a first checkpoint",
        )
        pid = int(log.read_text().split("started worker (pid ")[1].split(")")[0])
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not alive(pid), "the worker to die")
        checkpointed = checkpoint_docs(data_dir)  # final: nobody writes it now
        seen: list[int] = []

        def resumed_and_past_it() -> bool:
            assert up.poll() is None, log.read_text()
            status, stats = get(port, "/stats")
            assert status == 200, (status, stats)
            seen.append(stats["docs_seen"])
            after = log.read_text().split("worker crashed", 1)[-1]
            return "resumed from" in after and seen[-1] > checkpointed

        wait_until(resumed_and_past_it, "the restarted worker to train past its checkpoint")
        assert min(seen) >= checkpointed, (checkpointed, seen)
        output = log.read_text()
        assert "worker crashed (signal SIGKILL): restart 1 in " in output
        assert "restarted worker: restart 1" in output
        assert output.count("started worker (pid") == 2
        # The killed worker's scoring queue leaves no named semaphore behind to warn about.
        assert "leaked semaphore" not in output, output
    finally:
        code = stop_up(up)
    output = log.read_text()
    assert code == 0, output
    assert "worker exited with code 0" in output and "checkpoint (stop)" in output
    assert "leaked semaphore" not in output, output
    for child in started_pids(output):
        assert not alive(child), f"child {child} still runs after up exited"


def test_children_stop_when_up_is_killed(tmp_path: Path) -> None:
    """A SIGKILLed ``up`` leaves no orphans: its children get SIGTERM from the kernel."""
    data_dir, port, log = tmp_path / "data", free_port(), tmp_path / "up.log"
    up = start_up(data_dir, port, log)
    try:
        wait_until(lambda: len(started_pids(log.read_text())) >= 4, "all four children")
        pids = started_pids(log.read_text())
        up.kill()
        up.wait(timeout=DEADLINE_S)
        wait_until(lambda: not any(alive(pid) for pid in pids), "the orphans to exit")
    finally:
        for pid in started_pids(log.read_text()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
