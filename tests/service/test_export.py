"""``streamlda export`` end to end: a model learned from real articles, published with its stream
figures, exported by the command as a process; pyLDAvis takes the export as it is and its page
draws the topics in headless Chromium, offline; ``GET /admin/export`` streams the same files."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import redis
import torch

from lda.batch import Batch
from lda.evaluation.perplexity import document_topic_proportions
from lda.gibbs import GibbsConfig
from lda.model import LearnerConfig, StreamingLDA
from lda.vocab import Vocabulary
from service.api.app import create_app
from service.settings import Settings
from service.store.published_model import StreamFigures, publish_model
from tests.service.api.test_page import CHROMIUM, dump_dom
from tests.service.conftest import ADMIN_TOKEN, FreshClient
from tests.support.corpora import CORPORA, plain_records
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

K, ARTICLES, SAMPLE, BATCH = 6, 300, 100, 50
EXPORT_TIMEOUT_S = 120


def learn(client: redis.Redis) -> int:
    """Learn K topics from ARTICLES real articles as the worker would, and publish them with
    the stream's figures: the words' counts in the tokens learned, and a uniform sample of the
    documents with their lengths and topic shares. Returns the documents learned."""
    vocabulary = Vocabulary.load(CORPORA / "vocab-7702.txt")
    documents = [vocabulary.encode(r["text"]) for r in plain_records(ARTICLES)]
    documents = [d for d in documents if d]
    model = StreamingLDA(LearnerConfig(K, len(vocabulary)), seed=0)
    for start in range(0, len(documents), BATCH):
        model.update(Batch.from_ids(documents[start : start + BATCH]))
    counts = np.bincount(np.concatenate(documents), minlength=len(vocabulary))
    rng = np.random.default_rng(0)
    sample = [documents[i] for i in rng.choice(len(documents), SAMPLE, replace=False)]
    gibbs = replace(GibbsConfig.from_learner(model.config), need_document_topic=True)
    generator = torch.Generator().manual_seed(0)
    shares = document_topic_proportions(model.beta_mean, Batch.from_ids(sample), gibbs, generator)
    lengths = np.array([len(d) for d in sample] + [0])  # the last: no word in the vocabulary
    doc_topic = np.vstack([shares.numpy(), np.full((1, K), 1 / K)])
    sizes = (doc_topic * lengths[:, None]).sum(0)
    figures = StreamFigures(
        term_frequency=counts.astype(np.float64),
        topic_size=sizes / sizes.sum(),
        doc_lengths=lengths,
        doc_topic=doc_topic.astype(np.float32),
    )
    assert (counts == 0).any(), "a few hundred articles leave some vocabulary words unseen"
    publish_model(
        client,
        model.beta_mean,
        vocabulary.words,
        docs_seen=model.docs_seen,
        gamma=float(model.config.gamma or 0),
        stream=figures,
    )
    return model.docs_seen


def export(url: str, out: Path) -> subprocess.CompletedProcess[str]:
    """``streamlda export`` run as its own process."""
    command = [sys.executable, "-m", "service", "export", "--redis", url, "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)


def pyldavis_page(data: dict[str, object], path: Path) -> str:
    """pyLDAvis' page of ``data`` as prepare takes it, loading d3 and LDAvis from the files
    shipped in the package (no network); its DOM once Chromium ran it."""
    import pyLDAvis
    import pyLDAvis.urls

    prepared = pyLDAvis.prepare(**data)
    pyLDAvis.save_html(
        prepared,
        str(path),
        d3_url=Path(pyLDAvis.urls.D3_LOCAL).as_uri(),
        ldavis_url=Path(pyLDAvis.urls.LDAVIS_LOCAL).as_uri(),
        ldavis_css_url=Path(pyLDAvis.urls.LDAVIS_CSS_LOCAL).as_uri(),
    )
    assert "https://" not in path.read_text()
    return dump_dom(path.as_uri(), path.parent / "profile")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_pyldavis_draws_the_export_of_a_model_learned_from_real_articles(
    redis_client: redis.Redis, redis_server: object, settings: Settings, tmp_path: Path
) -> None:
    docs_seen = learn(redis_client)
    url = settings.store.redis_url
    assert url is not None
    out = tmp_path / "export"
    done = export(url, out)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["docs_seen"] == docs_seen and manifest["topics"] == K
    assert manifest["pyldavis"]["documents_dropped_empty"] == 1
    assert sorted(p.name for p in out.iterdir()) == sorted(manifest["files"])

    dom = pyldavis_page(json.loads((out / "pyldavis.json").read_text()), tmp_path / "vis.html")
    assert "<svg" in dom
    assert dom.count('class="dot"') == K, "one circle per topic"

    with FreshClient(create_app(settings)) as api:
        response = api.get("/admin/export", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/gzip"
    folder = f"streamlda-export-{manifest['model_version'][:12]}"
    disposition = response.headers["content-disposition"]
    assert disposition == f'attachment; filename="{folder}.tar.gz"'
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert members == {f"{folder}/{p.name}": p.read_bytes() for p in out.iterdir()}


def test_a_model_without_stream_figures_is_refused_and_nothing_is_written(
    redis_client: redis.Redis, settings: Settings, tmp_path: Path
) -> None:
    url = settings.store.redis_url
    assert url is not None
    out = tmp_path / "export"
    done = export(url, out)
    assert done.returncode != 0 and "no model yet" in done.stderr
    beta = torch.full((2, 3), 1 / 3)
    publish_model(redis_client, beta, ["alpha", "beta", "gamma"], docs_seen=10, gamma=0.1)
    done = export(url, out)
    assert done.returncode != 0
    assert "no stream figures" in done.stderr and "predates" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "redis"]


def test_a_refused_password_and_a_bad_url_are_one_line_without_the_password(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    with redis_server.client() as client:
        client.config_set("requirepass", "the-right-one")
    for url, said in [
        (f"redis://:not-the-password@127.0.0.1:{redis_server.port}/0", "Redis refused"),
        ("redis://admin:not-the-password@host:bad/0", "bad Redis URL"),
    ]:
        done = export(url, tmp_path / "export")
        assert done.returncode == 2
        assert done.stderr.startswith(f"streamlda export: error: {said}"), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "not-the-password" not in done.stdout + done.stderr
    assert not (tmp_path / "export").exists()
