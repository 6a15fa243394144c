"""All DEV shards as one JSON-lines source: the services' benchmarks need a stream that does not
run dry while they measure (one shard is 5,000 articles, a few seconds of learning)."""

from __future__ import annotations

import shutil
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


def all_dev(directory: Path, corpora: Path = CORPORA) -> Path:
    """``directory/dev-all.jsonl.gz``: the shards' gzip members back to back (valid gzip), read
    in place from ``corpora`` and written outside the repository."""
    target = directory / "dev-all.jsonl.gz"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            for shard in sorted(corpora.glob("dev-*.jsonl.gz")):
                with shard.open("rb") as part:
                    shutil.copyfileobj(part, out)
    return target
