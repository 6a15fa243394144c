"""The benchmarks' shared helpers: where the checkout and the corpora are, the DEV articles read
and encoded as every learner benchmark reads them, threads, and stopping a ``streamlda up`` a
benchmark started.

Loading it imports only the standard library (torch, numba and the rest are imported where a
helper needs them): the GPU check's orchestrator imports it before its part installs the
service's dependencies.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from lda.vocab import Vocabulary

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("STREAMLDA_SHARED", REPO.parent / "shared"))
CORPORA = REPO.parent / "shared" / "corpora"  # the DEV shards and vocabularies, read in place


@dataclass
class Corpus:
    """Pre-encoded documents: held-out and training word ids, and what was skipped."""

    heldout: list[list[int]]
    train: list[list[int]]
    skipped_empty: int
    files: list[str]

    @property
    def train_tokens(self) -> int:
        return sum(len(d) for d in self.train)


def read_texts(corpus_dir: Path) -> tuple[list[Path], Iterator[str]]:
    """The DEV files in order and their articles' plain texts (wikitext stripped), lazily."""
    import mwparserfromhell as wikitext

    files = sorted(corpus_dir.glob("dev-*.jsonl.gz"))
    if not files:
        raise SystemExit(f"error: no dev-*.jsonl.gz in {corpus_dir}")

    def texts() -> Iterator[str]:
        for path in files:
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                for line in lines:
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    text = record.get("text") or ""
                    if record.get("format") == "wikitext":
                        text = str(wikitext.parse(text).strip_code())
                    yield text

    return files, texts()


def stream_vocabulary(corpus_dir: Path, size: int, docs: int) -> Vocabulary:
    """The vocabulary the service builds from a stream: the ``size`` most frequent words of its
    first ``docs`` texts (held-out ones included, as the session counts them)."""
    _, texts = read_texts(corpus_dir)
    from lda.vocab import build_vocabulary

    return build_vocabulary(itertools.islice(texts, docs), size)


def read_corpus(
    corpus_dir: Path,
    vocab: Vocabulary,
    n_heldout: int,
    n_train: int,
    limit: int | None = None,
    short_ok: bool = False,
) -> Corpus:
    """First ``n_heldout`` then ``n_train`` documents with in-vocabulary tokens, in file order
    (a warning if there are fewer, unless ``short_ok``: the caller repeats them)."""
    files, texts = read_texts(corpus_dir)
    heldout: list[list[int]] = []
    train: list[list[int]] = []
    skipped = 0
    used = [path.name for path in files]
    for text in texts:
        ids = vocab.encode(text)
        if limit is not None:
            ids = ids[:limit]
        if not ids:
            skipped += 1
            continue
        (heldout if len(heldout) < n_heldout else train).append(ids)
        if len(train) >= n_train:
            return Corpus(heldout, train, skipped, used)
    if not short_ok:
        print(
            f"warning: corpus ran out: {len(heldout)} held-out, {len(train)} training documents",
            file=sys.stderr,
        )
    return Corpus(heldout, train, skipped, used)


def repeated(documents: list[list[int]], n: int) -> list[list[int]]:
    """The first ``n`` documents of the stream that cycles through ``documents`` (the lists are
    shared, not copied)."""
    return [documents[i % len(documents)] for i in range(n)]


def minibatches(documents: list[list[int]], size: int) -> list[list[list[int]]]:
    """Consecutive groups of ``size`` documents (the last may be shorter)."""
    return [documents[i : i + size] for i in range(0, len(documents), size)]


def checkpoint_docs(requested: Sequence[int], n_docs: int, batch_size: int) -> list[int]:
    """Document counts where every system is scored: each requested count rounded up to whole
    minibatches (where the streaming learners can stop), capped at D, and D itself."""
    rounded = {min(n_docs, -(-c // batch_size) * batch_size) for c in requested if c > 0}
    return sorted(rounded | {n_docs})


def set_threads(n: int, torch_threads: int | None = None) -> int:
    """Torch and numba threads (numba is capped by its pool size); returns numba's count."""
    import numba
    import torch

    torch.set_num_threads(torch_threads or n)
    pool = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    numba_threads = max(1, min(n, pool))
    numba.set_num_threads(numba_threads)
    peer_threads(n)
    return numba_threads


def peer_threads(n: int) -> contextlib.AbstractContextManager[object]:
    """Cap the BLAS and OpenMP pools of the libraries loaded *now* at ``n`` threads (as a
    context manager it restores them). Called again once a peer's libraries are imported."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n)


def all_dev(directory: Path, corpora: Path = CORPORA) -> Path:
    """``directory/dev-all.jsonl.gz``: the DEV shards' gzip members back to back (valid gzip),
    read in place from ``corpora`` and written outside the repository. The services' benchmarks
    need a stream that does not run dry while they measure (one shard is 5,000 articles, a few
    seconds of learning)."""
    target = directory / "dev-all.jsonl.gz"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            for shard in sorted(corpora.glob("dev-*.jsonl.gz")):
                with shard.open("rb") as part:
                    shutil.copyfileobj(part, out)
    return target


def stop_up(up: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Stop a ``streamlda up`` a benchmark started, if it still runs, and reap it: SIGTERM (the
    worker's final checkpoint), then SIGKILL if it outlives ``timeout_s``."""
    if up.poll() is None:
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; the CPU needs no wait)."""
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def module_env() -> dict[str, str]:
    """This process's environment with the checkout first on ``PYTHONPATH``: a child started as
    ``python -m benchmarks.<name>`` then imports this checkout from any working directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def get(port: int, path: str) -> dict[str, Any] | None:
    """The API's JSON answer, or None while it is not up (or not ready)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
            return answer
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None
