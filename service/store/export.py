"""The export of the served model: its files, written to a folder or streamed as a .tar.gz.

One implementation for ``streamlda export`` and ``GET /admin/export``, so both hand out the same
bytes. The files are made one at a time from a :class:`PublishedModel` (the largest,
pyldavis.json, is K×W numbers as text), so at most one is held beside the model. docs/export.md
says what each file holds.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from lda.gamma import gamma_vector, symmetric_value
from lda.topic_ids import saved
from service.store.published_model import PublishedModel, StreamFigures
from service.store.topic_seeds import TopicSeeds

# Each topic's words in topic_words.csv: pyLDAvis's default R, the words a person reads.
CSV_TOP_WORDS = 30
FILES = (
    "pyldavis.json",
    "beta.npy",
    "doc_topic.npy",
    "doc_lengths.npy",
    "term_frequency.npy",
    "topic_size.npy",
    "vocab.txt",
    "topic_words.csv",
    "manifest.json",
)
# gzip, not zlib, framing (wbits 16 + 15); level 6 is gzip's own default.
_GZIP_WBITS = 31
_GZIP_LEVEL = 6


class ExportError(ValueError):
    """The published model cannot be exported; the message says why, for a person."""


@dataclass(frozen=True)
class Export:
    """A model with stream figures, and what pyLDAvis can take of them: the sample's documents
    with at least one token and the words the stream counted at least once."""

    model: PublishedModel
    stream: StreamFigures
    docs: np.ndarray  # (n,) bool: sample documents kept for pyLDAvis
    words: np.ndarray  # (W,) bool: vocabulary words kept for pyLDAvis
    seeds: Mapping[int, TopicSeeds] = field(default_factory=dict)  # the seeded topics'

    @classmethod
    def of(cls, model: PublishedModel, seeds: Mapping[int, TopicSeeds] | None = None) -> Export:
        """The export of ``model``, or ExportError when it has nothing pyLDAvis can show."""
        stream = model.stream
        if stream is None:
            raise ExportError(
                "the published model has no stream figures (term frequencies, document "
                "sample): its worker predates them; run a current worker until it publishes"
            )
        docs = np.asarray(stream.doc_lengths) > 0
        words = np.asarray(stream.term_frequency) > 0
        if not docs.any() or not words.any():
            raise ExportError(
                "the published model's document sample is empty (no learned document with a "
                "vocabulary word yet, or STREAMLDA_EXPORT_DOCS is 0): nothing for pyLDAvis"
            )
        return cls(model, stream, docs, words, dict(seeds or {}))

    def files(self) -> Iterator[tuple[str, bytes]]:
        """(name, contents) of every file in FILES' order, each made when asked for."""
        makers: dict[str, Callable[[], bytes]] = {
            "pyldavis.json": self.pyldavis_json,
            "beta.npy": lambda: _npy(np.asarray(self.model.beta, dtype="<f4")),
            "doc_topic.npy": lambda: _npy(np.asarray(self.stream.doc_topic, dtype="<f4")),
            "doc_lengths.npy": lambda: _npy(np.asarray(self.stream.doc_lengths, dtype="<i8")),
            "term_frequency.npy": lambda: _npy(np.asarray(self.stream.term_frequency, dtype="<f8")),
            "topic_size.npy": lambda: _npy(np.asarray(self.stream.topic_size, dtype="<f8")),
            "vocab.txt": lambda: ("\n".join(self.model.vocab) + "\n").encode("utf-8"),
            "topic_words.csv": self.topic_words_csv,
            "manifest.json": self.manifest_json,
        }
        for name in FILES:
            yield name, makers[name]()

    def pyldavis_json(self) -> bytes:
        """pyLDAvis.prepare's five arguments: the kept words' columns of beta and the kept
        documents' rows, each row renormalised in float64 so it sums to 1."""
        beta = np.asarray(self.model.beta, dtype=np.float64)[:, self.words]
        doc_topic = np.asarray(self.stream.doc_topic, dtype=np.float64)[self.docs]
        data = {
            "topic_term_dists": _rows_sum_to_one(beta),
            "doc_topic_dists": _rows_sum_to_one(doc_topic),
            "doc_lengths": np.ascontiguousarray(self.stream.doc_lengths[self.docs], dtype=np.int64),
            "vocab": [w for w, kept in zip(self.model.vocab, self.words, strict=True) if kept],
            "term_frequency": np.ascontiguousarray(
                self.stream.term_frequency[self.words], dtype=np.float64
            ),
        }
        return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY)

    def topic_words_csv(self) -> bytes:
        """Each topic's CSV_TOP_WORDS most probable words, one row each: topic (its number),
        rank, word, probability (ties by word id)."""
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["topic", "rank", "word", "probability"])
        model = self.model
        beta = np.asarray(model.beta, dtype=np.float32)
        top = min(CSV_TOP_WORDS, beta.shape[1])
        for k, row in enumerate(beta):
            for rank, w in enumerate(np.argsort(-row, kind="stable")[:top], start=1):
                writer.writerow([model.number(k), rank, model.vocab[w], str(row[w])])
        return text.getvalue().encode("utf-8")

    def manifest_json(self) -> bytes:
        """What the export is of, and what pyldavis.json left out."""
        model = self.model
        manifest: dict[str, object] = {
            "model_version": model.version,
            "docs_seen": model.docs_seen,
            "published_at": model.published_at,
            "topics": model.n_topics,
            "vocab_size": len(model.vocab),
            "vocab_version": model.vocab_version,
            # the document-topic prior, one value per topic (learned, or the symmetric one)
            "gamma": [float(g) for g in gamma_vector(model.gamma, model.n_topics)],
            "gamma_learned": symmetric_value(model.gamma) is None,
            "doc_sample": len(self.docs),
            "pyldavis": {
                "documents": int(self.docs.sum()),
                "documents_dropped_empty": int((~self.docs).sum()),
                "words": int(self.words.sum()),
                "words_dropped_unseen": int((~self.words).sum()),
            },
            "files": list(FILES),
            "seeds": {
                str(k): {"words": list(s.words), "strength": s.strength}
                for k, s in sorted(self.seeds.items())
            },
        }
        numbers = saved(model.topic_ids)
        if numbers is not None:  # topics move: row k of every file is this number's
            manifest["topic_ids"] = numbers
        return (json.dumps(manifest, indent=1) + "\n").encode("utf-8")

    def archive_name(self) -> str:
        """The archive's name, and its top folder's: the model version's first 12 digits."""
        return f"streamlda-export-{self.model.version[:12]}"


def _rows_sum_to_one(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` (float64) with each row divided by its sum; a row of zeros stays zeros."""
    sums = matrix.sum(axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.where(sums > 0, sums, 1.0))


def _npy(array: np.ndarray) -> bytes:
    """``array`` in NumPy's .npy format."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def write_directory(export: Export, out: Path) -> None:
    """Write the files into ``out``, which must be absent or empty: into a temporary folder
    beside it, renamed to ``out`` once whole, so a failure leaves nothing half-written."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} exists and is not an empty folder: choose a new one")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, data in export.files():
            (staging / name).write_bytes(data)
        os.replace(staging, out)  # an empty ``out`` is replaced, atomically
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


class _Sink:
    """A write-only file that keeps what tarfile writes until it is taken, gzipped."""

    def __init__(self) -> None:
        self._gzip = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(self._gzip.compress(data))
        return len(data)

    def take(self, final: bool = False) -> bytes:
        if final:
            self._parts.append(self._gzip.flush())
        out = b"".join(self._parts)
        self._parts.clear()
        return out


def tar_gz(export: Export) -> Iterator[bytes]:
    """The files as a .tar.gz, in pieces as each file is made, under one top folder named
    :meth:`Export.archive_name` (the same bytes for the same model: times are its
    published_at, the gzip header's is zero)."""
    sink = _Sink()
    folder = export.archive_name()
    mtime = int(export.model.published_at)
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for name, data in export.files():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))
            piece = sink.take()
            if piece:
                yield piece
    yield sink.take(final=True)
