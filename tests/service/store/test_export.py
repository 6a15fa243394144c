"""The export's files from a published model: pyLDAvis's arguments as it checks them, the
matrices as published, nothing half-written, and the same bytes in a folder and a .tar.gz."""

from __future__ import annotations

import csv
import io
import json
import tarfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from service.store.export import CSV_TOP_WORDS, FILES, Export, ExportError, tar_gz, write_directory
from service.store.published_model import PublishedModel, StreamFigures
from service.store.topic_seeds import TopicSeeds

K, W, N = 3, 40, 6


def model(stream: bool = True) -> PublishedModel:
    """A K×W model whose word 5 the stream never counted and whose sample document 2 is empty."""
    rng = np.random.default_rng(0)
    beta = rng.dirichlet(np.ones(W), K).astype(np.float32)
    term_frequency = rng.integers(1, 50, W).astype(np.float64)
    term_frequency[5] = 0
    doc_lengths = rng.integers(1, 300, N).astype(np.int64)
    doc_lengths[2] = 0
    figures = StreamFigures(
        term_frequency=term_frequency,
        topic_size=np.array([0.5, 0.3, 0.2]),
        doc_lengths=doc_lengths,
        doc_topic=rng.dirichlet(np.ones(K), N).astype(np.float32),
    )
    return PublishedModel(
        version="0123456789abcdef",
        docs_seen=1234,
        gamma=0.1,
        beta=beta,
        vocab=[f"word{i}" for i in range(W)],
        published_at=1_700_000_000.5,
        stream=figures if stream else None,
        vocab_version=2,
    )


def files(export: Export) -> dict[str, bytes]:
    return dict(export.files())


def test_a_model_without_stream_figures_is_refused_saying_why() -> None:
    with pytest.raises(ExportError, match="no stream figures"):
        Export.of(model(stream=False))


def test_a_sample_without_a_document_is_refused() -> None:
    published = model()
    assert published.stream is not None
    empty = replace(
        published.stream,
        doc_lengths=np.zeros(0, dtype=np.int64),
        doc_topic=np.zeros((0, K), dtype=np.float32),
    )
    with pytest.raises(ExportError, match="document sample is empty"):
        Export.of(replace(published, stream=empty))


def test_pyldavis_json_holds_prepares_arguments_without_empty_documents_or_unseen_words() -> None:
    published = model()
    data = json.loads(files(Export.of(published))["pyldavis.json"])
    assert set(data) == {
        "topic_term_dists",
        "doc_topic_dists",
        "doc_lengths",
        "vocab",
        "term_frequency",
    }
    topic_term, doc_topic = np.array(data["topic_term_dists"]), np.array(data["doc_topic_dists"])
    assert topic_term.shape == (K, W - 1) and doc_topic.shape == (N - 1, K)
    np.testing.assert_allclose(topic_term.sum(1), 1, atol=1e-12)
    np.testing.assert_allclose(doc_topic.sum(1), 1, atol=1e-12)
    assert "word5" not in data["vocab"] and len(data["vocab"]) == W - 1
    assert min(data["term_frequency"]) > 0 and min(data["doc_lengths"]) > 0
    # the kept words' probabilities keep their ratios
    beta = published.beta.astype(np.float64)
    kept = np.delete(beta, 5, axis=1)
    np.testing.assert_allclose(topic_term, kept / kept.sum(1, keepdims=True), rtol=1e-12)


def test_the_matrices_are_the_published_figures_unfiltered() -> None:
    published = model()
    stream = published.stream
    assert stream is not None
    made = files(Export.of(published))
    assert list(made) == list(FILES)

    def load(name: str) -> np.ndarray:
        return np.load(io.BytesIO(made[name]), allow_pickle=False)

    assert load("beta.npy").dtype == np.float32
    np.testing.assert_array_equal(load("beta.npy"), published.beta)
    np.testing.assert_array_equal(load("doc_topic.npy"), stream.doc_topic)
    assert load("doc_lengths.npy").dtype == np.int64
    np.testing.assert_array_equal(load("doc_lengths.npy"), stream.doc_lengths)
    np.testing.assert_array_equal(load("term_frequency.npy"), stream.term_frequency)
    np.testing.assert_array_equal(load("topic_size.npy"), stream.topic_size)
    assert made["vocab.txt"].decode().splitlines() == published.vocab


def test_topic_words_csv_lists_each_topics_top_words_in_rank_order() -> None:
    published = model()
    rows = list(
        csv.DictReader(io.StringIO(files(Export.of(published))["topic_words.csv"].decode()))
    )
    assert len(rows) == K * CSV_TOP_WORDS
    assert list(rows[0]) == ["topic", "rank", "word", "probability"]
    first = [r for r in rows if r["topic"] == "1"]
    assert [int(r["rank"]) for r in first] == list(range(1, CSV_TOP_WORDS + 1))
    best = int(np.argmax(published.beta[1]))
    assert first[0]["word"] == f"word{best}"
    assert float(first[0]["probability"]) == pytest.approx(float(published.beta[1, best]))
    probabilities = [float(r["probability"]) for r in first]
    assert probabilities == sorted(probabilities, reverse=True)


def test_the_manifest_says_what_the_export_is_of_and_what_pyldavis_json_left_out() -> None:
    manifest = json.loads(files(Export.of(model()))["manifest.json"])
    assert manifest == {
        "model_version": "0123456789abcdef",
        "docs_seen": 1234,
        "published_at": 1_700_000_000.5,
        "topics": K,
        "vocab_size": W,
        "vocab_version": 2,
        "gamma": [0.1] * K,
        "gamma_learned": False,
        "doc_sample": N,
        "pyldavis": {
            "documents": N - 1,
            "documents_dropped_empty": 1,
            "words": W - 1,
            "words_dropped_unseen": 1,
        },
        "files": list(FILES),
        "seeds": {},
    }


def test_the_manifest_carries_a_learned_gamma() -> None:
    learned = tuple(0.01 * (k + 1) for k in range(K))
    manifest = json.loads(files(Export.of(replace(model(), gamma=learned)))["manifest.json"])
    assert manifest["gamma"] == list(learned) and manifest["gamma_learned"] is True


def test_the_manifest_lists_the_seeded_topics() -> None:
    seeds = {3: TopicSeeds(("film", "actor"), 2.0), 1: TopicSeeds(("war",), 5.0)}
    manifest = json.loads(files(Export.of(model(), seeds))["manifest.json"])
    assert manifest["seeds"] == {
        "1": {"words": ["war"], "strength": 5.0},
        "3": {"words": ["film", "actor"], "strength": 2.0},
    }


def test_a_folder_is_written_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = Export.of(model())
    out = tmp_path / "out"
    out.mkdir()  # an empty folder is taken
    write_directory(export, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == files(export)
    with pytest.raises(ExportError, match="not an empty folder"):
        write_directory(export, out)

    def failing(self: Export) -> Iterator[tuple[str, bytes]]:
        yield "beta.npy", b"partial"
        raise OSError("disk full")

    monkeypatch.setattr(Export, "files", failing)
    with pytest.raises(OSError, match="disk full"):
        write_directory(export, tmp_path / "other")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_archive_holds_the_same_files_in_one_folder_and_is_the_same_each_time() -> None:
    export = Export.of(model())
    archive = b"".join(tar_gz(export))
    assert archive == b"".join(tar_gz(export))
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    folder = "streamlda-export-0123456789ab"
    assert members == {f"{folder}/{name}": data for name, data in files(export).items()}
