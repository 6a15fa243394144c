"""What each part of the GPU check is handed: its sizes (the sitting's, or the dry run's tiny
ones), its data, where it writes its result lines, and its deadline; and how it fails."""

from __future__ import annotations

import contextlib
import json
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHARDS = ("dev-00.jsonl.gz", "dev-01.jsonl.gz")  # 10,000 articles: what the parts read
BIG_VOCAB, BIG_VOCAB_DOCS = 100_000, 30_000  # W = 100,000 counted over all 30,000 articles
TAIL_CHARS = 2000  # of a failed part's output, in its status line and the summary
GRACE_S = 8.0  # a part's own deadline falls this long before its hard limit


@dataclass(frozen=True)
class LearnerCell:
    """One learner comparison: K, W and dtype, the documents (and wall seconds at most) the
    device and the CPU learn; the CPU's count is also a checkpoint of the device's run."""

    topics: int
    words: int
    dtype: str
    device_docs: int
    cpu_docs: int
    device_budget_s: float
    cpu_budget_s: float


@dataclass(frozen=True)
class Sizes:
    """How much each part does: the GPU sitting's sizes, or the dry run's tiny ones."""

    topics: tuple[int, ...]  # the kernels' K
    words: tuple[int, ...]  # the kernels' W
    warm_docs: int  # SGRLD documents before timing, so beta looks learned
    batch: int  # documents per minibatch (the shipped 100)
    cpu_batches: int  # minibatches timed on the CPU (it is slow at K = 1,000)
    device_batches: int  # minibatches timed on the device
    big_batch: int  # one larger minibatch on the device: how it fills
    max_tokens: int | None  # documents truncated (the dry run only)
    vocab_docs: int  # texts a vocabulary missing from the data is counted over
    heldout: int
    eval_sweeps: int
    learner: tuple[LearnerCell, ...]
    up_seconds: float  # up's measured window, from its first learned document
    up_env: dict[str, str] = field(default_factory=dict)


REAL = Sizes(
    topics=(50, 200, 1000),
    words=(7702, BIG_VOCAB),
    warm_docs=300,
    batch=100,
    cpu_batches=1,
    device_batches=3,
    big_batch=1000,
    max_tokens=None,
    vocab_docs=BIG_VOCAB_DOCS,
    heldout=1000,
    eval_sweeps=50,
    learner=(
        LearnerCell(50, BIG_VOCAB, "float64", 8000, 2000, 20.0, 12.0),
        LearnerCell(1000, BIG_VOCAB, "float32", 4000, 1000, 25.0, 15.0),
    ),
    up_seconds=60.0,
)


DRY = Sizes(
    topics=(4,),
    words=(7702, 300),
    warm_docs=6,
    batch=3,
    cpu_batches=1,
    device_batches=1,
    big_batch=6,
    max_tokens=20,  # two held-out test tokens a document (every tenth)
    vocab_docs=100,
    heldout=20,
    eval_sweeps=4,
    learner=(
        LearnerCell(4, 300, "float64", 12, 6, 20.0, 20.0),
        LearnerCell(6, 300, "float32", 6, 3, 20.0, 20.0),
    ),
    up_seconds=4.0,
    up_env={
        "STREAMLDA_TOPICS": "5",
        "STREAMLDA_VOCAB_SIZE": "2000",
        "STREAMLDA_VOCAB_DOCS": "100",
        "STREAMLDA_HELDOUT": "50",
        "STREAMLDA_EVAL_EVERY": "200",
    },
)


class PartFailed(Exception):
    """A part ran but found something wrong: its message is the part's error."""


@dataclass
class Context:
    """What a part is handed: its sizes, its data, where it writes, when it must be done."""

    dry_run: bool
    sizes: Sizes
    bundle: Path
    data: Path
    logs: Path
    results: Path
    deadline: float
    errors: list[str] = field(default_factory=list)

    def emit(self, kind: str, **fields: Any) -> None:
        """One result line, written at once (a part killed later keeps what it found)."""
        record = {"part": self.part, "kind": kind, **fields}
        with self.results.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")
        print(json.dumps(record, default=str), flush=True)

    @property
    def part(self) -> str:
        return self.results.stem

    def left(self) -> float:
        """Seconds to this part's own deadline."""
        return self.deadline - time.monotonic()

    @contextlib.contextmanager
    def attempt(self, what: str) -> Iterator[None]:
        """Run one step of the part; if it raises, report it (an ``error`` line, the traceback
        in the log) and go on with the next, the part failing at its end."""
        try:
            yield
        except Exception as exc:
            traceback.print_exc()
            self.errors.append(what)
            self.emit("error", what=what, error=f"{type(exc).__name__}: {exc}"[:TAIL_CHARS])

    def raise_errors(self) -> None:
        if self.errors:
            raise PartFailed(f"{len(self.errors)} steps failed: {'; '.join(self.errors)}")
