"""How fast does a file source yield articles, with wikitext cleaned in the bounded child
process (as ``streamlda scrape`` opens it) against cleaned in this process (no bounds)?

Reads the source whole ``--rounds`` times each way, interleaved, and prints the median
articles a second of each and their ratio. The child is started once and reused, as a
scraper's is, so its start is not counted.

    .venv/bin/python -m benchmarks.source_rate                  # the wikitext dump sample
    .venv/bin/python -m benchmarks.source_rate --source jsonl:../shared/corpora/dev-00.jsonl.gz
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from service.ingest.bounded_clean import BoundedCleaner
from service.ingest.sources import open_source

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
DUMP = CORPORA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def rate(spec: str, clean: Callable[[str], str] | None) -> tuple[int, float]:
    """(articles, articles a second) of one whole read of ``spec``."""
    source = open_source(spec) if clean is None else open_source(spec, clean=clean)
    start = time.perf_counter()
    count = sum(1 for _ in source)
    return count, count / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=f"dump:{DUMP}")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    bounded: list[float] = []
    unbounded: list[float] = []
    with BoundedCleaner() as cleaner:
        cleaner("warm the child up")
        for _ in range(args.rounds):
            count, per_s = rate(args.source, cleaner)
            bounded.append(per_s)
            _, per_s = rate(args.source, None)
            unbounded.append(per_s)
    b, u = statistics.median(bounded), statistics.median(unbounded)
    print(f"{args.source}: {count} articles, median of {args.rounds} reads each")
    print(f"  cleaned in the bounded child: {b:8.1f} articles/s")
    print(f"  cleaned in this process:      {u:8.1f} articles/s")
    print(f"  bounded / in-process:         {b / u:8.3f}")


if __name__ == "__main__":
    main()
