"""``streamlda train`` cleans wikitext in the bounded child, as ``scrape`` does: lines the parser
is quadratic on (a minute or more each in this process) cost their parse bound and are counted
under ``parse_timeout``, and training goes on over the rest."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.support.corpora import CORPORA, plain_records

pytestmark = pytest.mark.slow

VOCAB = CORPORA / "vocab-7702.txt"
# Unbounded, each takes 20-30 s of CPU in the cleaner (at 40-60 kB: 7-12 s); bounded, 3-4 s.
HOSTILE = ("<ref name=" * 6_000, "{|\n" * 34_000, "<b>" * 33_000)


def test_train_skips_hostile_wikitext_at_its_parse_bound(tmp_path: Path) -> None:
    records = [dict(r) for r in plain_records(60)]
    for i, text in enumerate(HOSTILE):
        hostile = {"id": f"h{i}", "title": f"Hostile {i}", "text": text, "format": "wikitext"}
        records.insert(15 * (i + 1), hostile)
    source = tmp_path / "hostile.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "run"
    start = time.monotonic()
    result = subprocess.run(
        [
            sys.executable, "-m", "service.cli", "train", "--source", f"jsonl:{source}",
            "--vocab", str(VOCAB), "--topics", "5", "--docs", "50", "--heldout", "10",
            "--sweeps", "2", "--threads", "1", "--out", str(out), "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    took = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-3000:]
    extra = torch.load(out / "checkpoint.pt", weights_only=False)["extra"]
    assert extra["source_skips"] == {"parse_timeout": len(HOSTILE)}
    assert json.loads(result.stdout.splitlines()[-1])["docs_seen"] == 50
    assert took < 120, took  # unbounded, well over a minute of parsing alone
