"""`streamlda train` end to end on real articles, and its one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from service.cli import main
from service.learn.model_store import load_model
from tests.support.corpora import CORPORA

DEV = CORPORA / "dev-00.jsonl.gz"
VOCAB = CORPORA / "vocab-7702.txt"


@pytest.mark.slow  # a wikitext line starts the bounded cleaner's process
def test_train_json_lines_and_exports(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--source",
            f"jsonl:{DEV}",
            "--vocab",
            str(VOCAB),
            "--sampler",
            "sgrld",
            "--topics",
            "5",
            "--batch-size",
            "20",
            "--sweeps",
            "4",
            "--docs",
            "80",
            "--heldout",
            "20",
            "--eval-every",
            "40",
            "--threads",
            "1",
            "--seed",
            "1",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["docs_seen"] for r in rows] == [40, 80]
    for row in rows:
        assert set(row) == {
            "docs_seen",
            "perplexity",
            "perplexity_avg",
            "coherence",
            "diversity",
            "docs_per_second",
            "tokens_per_second",
            "elapsed_s",
            "sampler",
        }
        assert row["perplexity"] > 1 and row["sampler"] == "sgrld"
        assert -1 <= row["coherence"] <= 1 and 0 < row["diversity"] <= 1
    assert "topic   0:" in captured.err  # top words go to stderr with --json
    beta = np.load(out / "beta.npy")
    assert beta.shape == (5, 7702) and beta.dtype == np.float32
    np.testing.assert_allclose(beta.sum(1), 1.0, rtol=1e-4)
    vocab = (out / "vocab.txt").read_text().split()
    assert len(vocab) == 7702
    topics = json.loads((out / "topics.json").read_text())
    assert len(topics["topics"]) == 5 and topics["docs_seen"] == 80
    assert topics["estimate"] == "mean" and topics["mean_decay"] == 0.97
    # beta.npy and topics.json hold beta_mean, beta-sample.npy the chain's last sample.
    model, _, _ = load_model(out / "checkpoint.pt")
    np.testing.assert_array_equal(beta, model.beta_mean.float().numpy())
    sample = np.load(out / "beta-sample.npy")
    np.testing.assert_array_equal(sample, model.beta.float().numpy())
    assert np.abs(beta - sample).sum(1).min() > 0.05, "every topic's mean differs from the sample"
    for topic in topics["topics"]:
        top = np.argsort(-beta[topic["id"]], kind="stable")[:3]
        assert [w["word"] for w in topic["words"][:3]] == [vocab[i] for i in top]
        assert topic["words"][0]["weight"] == pytest.approx(float(beta[topic["id"], top[0]]))


@pytest.mark.slow  # a wikitext line starts the bounded cleaner's process
def test_train_builds_a_vocabulary_and_prints_a_table(tmp_path, capsys):
    code = main(
        [
            "train",
            "--source",
            f"jsonl:{DEV}",
            "--vocab-size",
            "300",
            "--topics",
            "3",
            "--batch-size",
            "10",
            "--sweeps",
            "2",
            "--docs",
            "20",
            "--heldout",
            "5",
            "--eval-every",
            "10",
            "--threads",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "perplexity" in out.splitlines()[0]
    assert len((tmp_path / "vocab.txt").read_text().split()) == 300


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "jsonl:/no/such/file.gz"], "cannot read /no/such/file.gz"),
        (["--source", f"jsonl:{CORPORA}"], "is a directory, not a file"),
        (["--source", "ftp:x"], "unknown source"),
        (["--source", f"jsonl:{DEV}", "--topics", "0"], "topics"),
        (["--source", f"jsonl:{DEV}", "--vocab", "/no/vocab.txt"], "cannot read vocabulary"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, args, message):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "service.cli",
            "train",
            *args,
            "--docs",
            "5",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _write_jsonl(path, texts):
    path.write_text(
        "".join(json.dumps({"title": f"t{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


def _run_train(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", "train", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_a_source_used_up_by_the_heldout_set_is_an_error_not_random_topics(tmp_path):
    source = _write_jsonl(tmp_path / "tiny.jsonl", ["history of the river city"] * 3)
    out = tmp_path / "run"
    result = _run_train(
        "--source", f"jsonl:{source}", "--vocab", str(VOCAB), "--heldout", "5", "--docs", "10",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 2
    assert "no documents left to train on" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (out / "checkpoint.pt").exists()


@pytest.mark.slow
def test_a_model_too_large_for_memory_is_one_error_line(tmp_path):
    result = _run_train(
        "--source", f"jsonl:{DEV}", "--vocab", str(VOCAB), "--topics", "100000000",
        "--docs", "5", "--heldout", "0", "--out", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 2
    assert "cannot allocate the model" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_undefined_perplexity_is_json_null_and_secrets_stay_out_of_the_checkpoint(
    tmp_path, capsys, monkeypatch
):
    """Held-out documents under 10 tokens have no test tokens: perplexity is undefined."""
    monkeypatch.setenv("STREAMLDA_ADMIN_TOKEN", "s3cret")
    monkeypatch.setenv("STREAMLDA_REDIS_URL", "redis://:pa55@localhost:6379/0")
    words = "history river city music album football season church village"
    source = _write_jsonl(tmp_path / "short.jsonl", [words] * 2 + [(words + " ") * 6] * 8)
    out = tmp_path / "run"
    code = main(
        [
            "train", "--source", f"jsonl:{source}", "--vocab", str(VOCAB), "--topics", "2",
            "--sweeps", "2", "--batch-size", "4", "--docs", "8", "--heldout", "2",
            "--eval-every", "4", "--threads", "1", "--out", str(out), "--json",
        ]
    )  # fmt: skip
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows and all(r["perplexity"] is None and r["perplexity_avg"] is None for r in rows)
    stored = torch.load(out / "checkpoint.pt", weights_only=False)["settings"]
    assert stored["topics"] == 2
    assert "admin_token" not in stored and "redis_url" not in stored
    assert b"s3cret" not in (out / "checkpoint.pt").read_bytes()
