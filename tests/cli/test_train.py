"""`streamlda train` end to end on real articles, and its one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from service.cli import main
from tests.support.corpora import CORPORA

DEV = CORPORA / "dev-00.jsonl.gz"
VOCAB = CORPORA / "vocab-7702.txt"


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
            "docs_per_second",
            "tokens_per_second",
            "elapsed_s",
            "sampler",
        }
        assert row["perplexity"] > 1 and row["sampler"] == "sgrld"
    assert "topic   0:" in captured.err  # top words go to stderr with --json
    beta = np.load(out / "beta.npy")
    assert beta.shape == (5, 7702) and beta.dtype == np.float32
    np.testing.assert_allclose(beta.sum(1), 1.0, rtol=1e-4)
    vocab = (out / "vocab.txt").read_text().split()
    assert len(vocab) == 7702
    topics = json.loads((out / "topics.json").read_text())
    assert len(topics["topics"]) == 5 and topics["docs_seen"] == 80
    assert (out / "checkpoint.pt").is_file()


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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "jsonl:/no/such/file.gz"], "cannot read /no/such/file.gz"),
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
