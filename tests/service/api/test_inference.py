"""The API's batched inference: texts become the learner's word ids, each document's answer is
the learner's own fixed point (``lda.inference.infer_topics``), the same whatever batch it
arrives in, and is written as JSON would write it."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lda.inference import infer_topics
from lda.tokens import WordIndex
from lda.vocab import Vocabulary
from service.api.infer.proportions import flatten, infer_batch, proportions, word_columns
from service.api.routes.infer import answers
from service.api.schemas import InferOut

K, W = 20, 400


def random_beta(seed: int = 0) -> torch.Tensor:
    """K x W topics as published (float32), peaked like learned ones, with a few words no
    topic emits (all-zero columns)."""
    generator = torch.Generator().manual_seed(seed)
    beta = torch.rand(K, W, generator=generator, dtype=torch.float64) ** 12
    beta[:, :5] = 0.0
    return (beta / beta.sum(1, keepdim=True)).to(torch.float32)


def documents(seed: int = 1) -> list[list[int]]:
    """Documents of 0 to 600 tokens (repeats, the zero columns, one word only)."""
    generator = torch.Generator().manual_seed(seed)
    docs: list[list[int]] = [[], [0, 1, 2], [7], [7] * 30]
    for length in (1, 3, 10, 50, 120, 300, 600, 45, 46, 200):
        docs.append(torch.randint(0, W, (length,), generator=generator).tolist())
    return docs


def word_major(beta: torch.Tensor) -> torch.Tensor:
    """beta as the API reads it from Redis: stored W x K, seen as K x W."""
    return beta.t().contiguous().t()


@pytest.mark.parametrize(("iterations", "tolerance"), [(100, 1e-6), (3, 1e-6), (500, 1e-9)])
def test_each_answer_is_the_learners_fixed_point(iterations: int, tolerance: float) -> None:
    beta = random_beta()
    docs = documents()
    columns = word_columns(word_major(beta))
    answers = infer_batch(columns, docs, 0.1, iterations=iterations, tolerance=tolerance)
    assert len(answers) == len(docs)
    for ids, answer in zip(docs, answers, strict=True):
        expected = infer_topics(
            beta, torch.tensor(ids, dtype=torch.long), 0.1, iterations=iterations,
            tolerance=tolerance,
        )  # fmt: skip
        assert answer == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert sum(answer) == pytest.approx(1.0, abs=1e-12)


def test_an_answer_does_not_depend_on_the_batch() -> None:
    columns = word_columns(word_major(random_beta()))
    docs = documents()
    together = infer_batch(columns, docs, 0.1)
    alone = [infer_batch(columns, [ids], 0.1)[0] for ids in docs]
    reversed_batch = infer_batch(columns, docs[::-1], 0.1)[::-1]
    assert together == alone == reversed_batch  # bit for bit


def test_no_words_and_unknown_words_give_the_prior() -> None:
    columns = word_columns(word_major(random_beta()))
    empty, unemitted = infer_batch(columns, [[], [0, 1, 1, 4]], 0.1)
    assert empty == [pytest.approx(1 / K)] * K
    assert unemitted == [pytest.approx(1 / K)] * K


def test_columns_in_float64_give_the_same_answers() -> None:
    beta = random_beta()
    docs = documents()
    single = infer_batch(word_columns(word_major(beta)), docs, 0.1)
    double = infer_batch(word_columns(word_major(beta.double())), docs, 0.1)
    assert single == double  # float32 columns are widened before any arithmetic


def test_answers_hold_the_same_floats_json_would_write() -> None:
    pi = torch.tensor(
        [
            [0.5, 0.25, 0.25],
            [1 / 3, 1 / 3, 1 / 3],
            [1e-300, 0.1 + 0.2, 0.7 - 1e-300],
            [1e-05, 2.5e-07, 1 - 1e-05 - 2.5e-07],
        ],
        dtype=torch.float64,
    ).numpy()
    tokens = [(4, 1), (0, 0), (12, 30), (1, 0)]
    head = '{"model_version":' + json.dumps('v"1') + ',"vocab_version":3,"docs_seen":7,'
    written = answers(head, tokens, pi)
    for body, (used, ignored), row in zip(written, tokens, pi.tolist(), strict=True):
        ranked = sorted(range(len(row)), key=lambda k: -row[k])  # ties by id
        expected = {
            "model_version": 'v"1',
            "vocab_version": 3,
            "docs_seen": 7,
            "tokens": used,
            "ignored_tokens": ignored,
            "proportions": row,
            "topics": [{"id": k, "weight": row[k]} for k in ranked],
        }
        assert json.loads(body) == expected  # every float round-trips exactly
        assert list(json.loads(body)) == list(expected)  # and the fields in the schema's order
        InferOut.model_validate_json(body)


def test_non_finite_proportions_are_refused() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        answers("{", [(1, 0)], torch.tensor([[float("nan"), 1.0]]).numpy())


WORDS = ["apple", "app", "apples", "banana", "über", "naïve", "x", "two words", "", "zebra"]
TEXTS = [
    "",
    "   ",
    "Apple apple APPLE app apples applesauce",
    "banana-apple;zebra\tzebra\nX x y",
    "Über naïve café — İstanbul ǅ ﬁ straße apple",
    "two words two-words",
    "\udcff apple surrogate",
    "a" * 5000 + " apple",
    "12345 !!! apple99banana",
]


def test_the_word_index_encodes_as_the_vocabulary_does() -> None:
    vocabulary = Vocabulary([w for w in WORDS if w])
    index = WordIndex([w for w in WORDS if w])
    ids, starts, tokens = index.encode(TEXTS)
    for d, text in enumerate(TEXTS):
        expected, n = vocabulary.encode_counted(text)
        assert ids[starts[d] : starts[d + 1]].tolist() == expected, text
        assert tokens[d] == n, text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("abcpxlez -Ü\u0130.\t"), max_size=40), max_size=5))
def test_any_text_encodes_as_the_vocabulary_does(texts: list[str]) -> None:
    words = ["apple", "ab", "abc", "zz", "le", "p", "ex", "cab", "pix", "zap", "lab"]
    vocabulary, index = Vocabulary(words), WordIndex(words)
    ids, starts, tokens = index.encode(texts)
    assert len(tokens) == len(texts)
    for d, text in enumerate(texts):
        expected, n = vocabulary.encode_counted(text)
        assert ids[starts[d] : starts[d + 1]].tolist() == expected
        assert tokens[d] == n


def test_a_large_vocabulary_finds_every_word() -> None:
    words = [
        f"w{'abcdefghij'[i % 10]}{'abcdefghij'[i // 10 % 10]}{'klmnopqrst'[i // 100]}"
        for i in range(1000)
    ]
    index = WordIndex(words)
    ids, starts, _ = index.encode([" ".join(words), " ".join(reversed(words))])
    assert ids[starts[0] : starts[1]].tolist() == list(range(1000))
    assert ids[starts[1] : starts[2]].tolist() == list(range(999, -1, -1))


@pytest.mark.parametrize("parts", [2, 3, 40])
def test_a_batch_split_over_threads_gives_the_same_answers(parts: int) -> None:
    columns = word_columns(word_major(random_beta()))
    ids, starts = flatten(documents())
    alone = proportions(columns, ids, starts, 0.1)
    with ThreadPoolExecutor(parts - 1) as helpers:
        split = proportions(columns, ids, starts, 0.1, helpers=helpers, parts=parts)
    assert np.array_equal(alone, split)
