"""The seeds file (--seeds / STREAMLDA_SEEDS): read as train, worker and up read it, a bad one
refused in one line that says why, and train learning under the seeds it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from service.errors import CommandError
from service.learn.model_store import load_model
from service.seeds_file import given_seeds
from tests.support.corpora import SHARDS

DEV = SHARDS[0]


def test_a_seeds_file_gives_each_topic_its_words(tmp_path: Path) -> None:
    path = tmp_path / "seeds.json"
    path.write_text(json.dumps({"3": ["film", "actor"], "0": ["war"]}))
    assert given_seeds(path, 5) == {3: ["film", "actor"], 0: ["war"]}
    assert given_seeds(None, 5) == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('["film"]', "expected an object from topic number to words"),
        ('{"x": ["film"]}', "'x' is not a topic number"),
        ('{"7": ["film"]}', "no topic 7: topics are 0 to 4"),
        ('{"2": "film"}', "topic 2's seeds must be a list of words"),
        ('{"2": []}', "topic 2 has no word"),
    ],
)
def test_a_bad_seeds_file_says_why(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "seeds.json"
    path.write_text(content)
    with pytest.raises(CommandError, match="seeds file") as caught:
        given_seeds(path, 5)
    assert message in str(caught.value)


def test_train_learns_under_the_seeds_and_keeps_them_in_its_checkpoint(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.json"
    seeds.write_text(json.dumps({"1": ["World", "city"]}))
    out = tmp_path / "out"
    code = main(
        ["train", "--source", f"jsonl:{DEV}", "--vocab-size", "300", "--topics", "3",
         "--batch-size", "10", "--sweeps", "2", "--docs", "20", "--heldout", "5",
         "--eval-every", "10", "--threads", "1", "--seeds", str(seeds), "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    vocab = (out / "vocab.txt").read_text().split()
    model, _, _ = load_model(out / "checkpoint.pt")
    assert sorted((k, vocab[w]) for k, w, _ in model.seeds.triples()) == [(1, "city"), (1, "world")]
    assert all(s > 0 for _, _, s in model.seeds.triples())


@pytest.mark.slow  # a process
def test_train_with_a_bad_seeds_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.json"
    seeds.write_text('{"9": ["film"]}')
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "train", "--source", f"jsonl:{DEV}",
         "--topics", "3", "--docs", "5", "--seeds", str(seeds), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "no topic 9: topics are 0 to 2" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
