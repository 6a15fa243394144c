"""How fast is the tokeniser, words in any alphabet against the old runs of a-z?

Times, on DEV articles, the learner's path (``Vocabulary.encode_counted``, what ingest and the
held-out scorer run per article), ``tokenize`` (building a vocabulary) and ``/infer``'s
(``WordIndex.encode`` over batches), each against the old a-z tokeniser reimplemented here
(lowercase, a bytes.translate table, split; the same compiled lookup for ``/infer``). Runs are
interleaved, old and new in turn, and the median of ``--rounds`` is reported as MB/s of UTF-8
text, with new/old.

    .venv/bin/python -m benchmarks.tokens                     # 3,000 articles, 7 rounds
    .venv/bin/python -m benchmarks.tokens --docs 500 --rounds 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from lda.tokens import WordIndex, _encode
from lda.vocab import Vocabulary, tokenize

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
A_TO_Z = bytes(b if 0x61 <= b <= 0x7A else 0x20 for b in range(256))


def articles(corpora: Path, n: int) -> list[str]:
    """The first ``n`` DEV articles' texts, shard after shard."""
    texts: list[str] = []
    for shard in sorted(corpora.glob("dev-*.jsonl.gz")):
        with gzip.open(shard, "rt", encoding="utf-8") as lines:
            for line in lines:
                texts.append(json.loads(line)["text"])
                if len(texts) == n:
                    return texts
    return texts


class OldVocabulary:
    """The a-z tokeniser as it was: lowercase, every byte but a-z a space, split."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.index = {w.encode("utf-8"): i for w, i in vocabulary.index.items()}

    def encode_counted(self, text: str) -> tuple[list[int], int]:
        words = text.lower().encode("utf-8", "surrogatepass").translate(A_TO_Z).split()
        ids = map(self.index.get, words)
        return [i for i in ids if i is not None], len(words)


def old_tokenize(text: str) -> list[str]:
    words = text.lower().encode("utf-8", "surrogatepass").translate(A_TO_Z).split()
    return [word.decode("ascii") for word in words]


def old_infer(index: WordIndex, texts: Sequence[str]) -> np.ndarray:
    """``WordIndex.encode`` as it was: the translated texts into the same compiled lookup."""
    letters = [text.lower().encode("utf-8", "surrogatepass").translate(A_TO_Z) for text in texts]
    lengths = np.fromiter(map(len, letters), dtype=np.int64, count=len(letters))
    starts = np.zeros(len(letters) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    data = np.frombuffer(b"".join(letters), dtype=np.uint8)
    ids = np.empty(data.shape[0] // 2 + len(letters) + 1, dtype=np.int64)
    id_starts = np.empty(len(letters) + 1, dtype=np.int64)
    tokens = np.empty(len(letters), dtype=np.int64)
    _encode(data, starts, index.chars, index.offsets, index.slots, ids, id_starts, tokens)
    return ids[: id_starts[-1]]


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-dir", type=Path, default=CORPORA)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=64, help="texts per /infer batch")
    args = parser.parse_args(argv)

    texts = articles(args.corpus_dir, args.docs)
    megabytes = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts) / 1e6
    vocabulary = Vocabulary.load(args.corpus_dir / "vocab-7702.txt")
    old, index = OldVocabulary(vocabulary), WordIndex(vocabulary.words)
    batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
    paths: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
        "Vocabulary.encode_counted": (
            lambda: [old.encode_counted(text) for text in texts],
            lambda: [vocabulary.encode_counted(text) for text in texts],
        ),
        "tokenize": (
            lambda: [old_tokenize(text) for text in texts],
            lambda: [tokenize(text) for text in texts],
        ),
        f"WordIndex.encode ({args.batch} a batch)": (
            lambda: [old_infer(index, batch) for batch in batches],
            lambda: [index.encode(batch) for batch in batches],
        ),
    }
    for old_run, new_run in paths.values():  # compile and warm caches
        old_run()
        new_run()
    seconds: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in paths}
    for _ in range(args.rounds):
        for name, (old_run, new_run) in paths.items():
            seconds[name][0].append(timed(old_run))
            seconds[name][1].append(timed(new_run))

    print(f"{len(texts)} DEV articles, {megabytes:.1f} MB UTF-8, median of {args.rounds} rounds")
    print(f"{'path':<32} {'old MB/s':>9} {'new MB/s':>9} {'new/old':>8}")
    results = {}
    for name, (old_seconds, new_seconds) in seconds.items():
        old_rate = megabytes / statistics.median(old_seconds)
        new_rate = megabytes / statistics.median(new_seconds)
        results[name] = {"old_mb_s": old_rate, "new_mb_s": new_rate, "ratio": new_rate / old_rate}
        print(f"{name:<32} {old_rate:>9.1f} {new_rate:>9.1f} {new_rate / old_rate:>8.2f}")
    return results


if __name__ == "__main__":
    main()
