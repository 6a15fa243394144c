"""StreamingLDA: the thin stateful class over the functional core (like torch.optim's classes).

One ``update(batch)`` runs Gibbs expectations with the current beta and one sampler step;
``evaluate`` scores a held-out set. Two estimates of the topics: ``beta``, the chain's current
sample, and ``beta_mean``, the mean of recent samples, which estimates E[beta | data] better
(so it is what ``evaluate`` and ``top_words`` take unless told otherwise). Randomness comes from
two explicit generators (training and evaluation), so evaluating does not change the training
trajectory; both are part of ``state_dict`` so a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar, cast

import torch

from lda.batch import Batch
from lda.config import (  # their home: lda.config (no torch); imported from here too
    Estimate,
    LearnerConfig,
)
from lda.evaluation.perplexity import HeldoutSet, PosteriorAverage
from lda.evaluation.perplexity import test_token_probabilities as _test_token_probabilities
from lda.evaluation.scorer import HeldoutScorer, ScorerConfig
from lda.gibbs.expectations import GibbsExpectations, gibbs_expectations
from lda.parallel import Layout, Reducer, layout
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.gradient import MinibatchStatistics
from lda.sgmcmc.samplers import SAMPLERS, SamplerState, StepInfo, init_state, step
from lda.sgmcmc.scir.lazy import LazyChain
from lda.sgmcmc.scir.lazy_kernel import columns_of

_Read = TypeVar("_Read")
# The lazy chain's sample is ranked among this many times n of the mean's top words.
SAMPLE_CANDIDATES = 4


class NonFiniteError(ArithmeticError):
    """A step produced a non-finite theta; the state was left unchanged."""


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name} was asked for but no CUDA device is available")
    return device


def _all_finite(*tensors: torch.Tensor) -> bool:
    """Every entry of every tensor finite. Finite sums prove it (NaN and inf propagate) at a
    twentieth of the cost of isfinite(x).all(), in one host read for all the tensors (a GPU
    step's only one); only a non-finite sum, or one that overflowed, is checked fully."""
    sums = torch.stack([x.sum() for x in tensors])
    return bool(torch.isfinite(sums).all()) or all(bool(torch.isfinite(x).all()) for x in tensors)


def _group(reducer: Reducer | None) -> Reducer | None:
    """The reducer when there is a group to sum over (more than one rank), else None."""
    return reducer if reducer is not None and reducer.world_size > 1 else None


class StreamingLDA:
    """Expanded-mean LDA learned online from minibatches with an SG-MCMC sampler."""

    def __init__(
        self,
        config: LearnerConfig,
        device: torch.device | str = "cpu",
        seed: int = 0,
        *,
        state: SamplerState | None = None,
        chain: LazyChain | None = None,
    ):
        """A learner drawn afresh from the prior, or one that goes on from ``state`` (and, for
        SCIR on the CPU, its lazy ``chain``) as :meth:`from_state_dict` restores them: no fresh
        K x W draw made only to be replaced."""
        self.config = config
        self.device = torch.device(device)
        self.seed = seed
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.eval_generator = torch.Generator(device=self.device).manual_seed(seed + 1)
        dtype = getattr(torch, config.dtype)
        self.state: SamplerState = (
            init_state(config.sampler, config.n_topics, config.n_words, self.generator, dtype)
            if state is None
            else state
        )
        self.posterior_average = PosteriorAverage()
        assert config.mean_decay is not None
        self.mean = ExponentialMean(config.mean_decay)
        self.docs_seen = 0
        self.tokens_seen = 0
        self._beta: tuple[SamplerState, torch.Tensor] | None = None  # (state, its beta)
        # SCIR on the CPU keeps its columns lazily (lda.sgmcmc.scir.lazy): a step costs O(K x the
        # minibatch's words). Its theta is updated in place, so reads are cached by step.
        self.chain: LazyChain | None = chain
        if chain is None and SAMPLERS[config.sampler].lazy and self.device.type == "cpu":
            assert config.alpha is not None
            self.chain = LazyChain(self.state.theta, config.alpha, config.mean_decay)
        if self.chain is not None:
            self.state = replace(self.state, theta=self.chain.theta)
        self._lazy_reads: dict[str, object] = {}

    @property
    def beta(self) -> torch.Tensor:
        """(K, W) topic-word probabilities of the current sample (do not modify it). Computed
        once per state: beta_mean takes it after a step and the next step's Gibbs sweeps read
        it again (states are replaced, never changed in place)."""
        if self.chain is not None:
            return self._lazy_read("beta", self._lazy_beta)
        if self._beta is None or self._beta[0] is not self.state:
            theta = self.state.theta
            self._beta = (self.state, theta / theta.sum(dim=1, keepdim=True))
        return self._beta[1]

    @property
    def beta_mean(self) -> torch.Tensor:
        """(K, W) posterior-mean estimate of beta: the exponential mean of the samples after each
        step (``mean_decay``), the current sample before the first step. Rows sum to 1. A
        tensor of its own: later steps leave it as it is (a reader may keep it)."""
        if self.chain is not None:
            return self._lazy_read("mean", self._lazy_beta_mean)
        return self.mean.value if self.mean.count else self.beta

    def _lazy_read(self, name: str, compute: Callable[[], _Read]) -> _Read:
        """A read of the lazy chain, computed once per step (its theta changes in place; a
        step drops every read, so no (K, W) result outlives the step it was read at)."""
        cached = self._lazy_reads.get(name)
        if cached is None:
            cached = compute()
            self._lazy_reads[name] = cached
        return cast(_Read, cached)

    def _peek(self) -> torch.Generator:
        """The lazy chain's reads draw their stale columns from a stream of their own, keyed by
        the step, so reading never moves the training chain and two reads agree."""
        return torch.Generator().manual_seed(self.seed * 1_000_003 + self.state.step)

    def _lazy_beta(self) -> torch.Tensor:
        """A draw of beta now: the stale columns drawn into the result only."""
        assert self.chain is not None
        return self.chain.sample_beta(self._peek(), getattr(torch, self.config.dtype))

    def _lazy_beta_mean(self) -> torch.Tensor:
        """The exponential mean of theta over the steps, rows normalised (lda.sgmcmc.scir.lazy)."""
        assert self.chain is not None
        return self.chain.mean_beta(getattr(torch, self.config.dtype))

    def estimate(self, which: Estimate = "mean") -> torch.Tensor:
        """(K, W) beta_mean (``mean``) or the current sample (``sample``)."""
        return self.beta_mean if which == "mean" else self.beta

    @property
    def step_size(self) -> float:
        assert self.config.schedule is not None
        return self.config.schedule(self.state.step)

    def corpus_size(self, n_documents: int) -> float:
        """N in the gradient's N/n: fixed, or growing with the documents seen (this batch too)."""
        if self.config.corpus_growth:
            return max(self.config.corpus_size, float(self.docs_seen + n_documents))
        return self.config.corpus_size

    def update(
        self, batch: Batch, reducer: Reducer | None = None, where: Layout | None = None
    ) -> StepInfo:
        """Learn from one minibatch: Gibbs expectations, then one sampler step.

        With a ``reducer`` the minibatch is the union of every rank's ``batch`` (one may be
        empty): each rank computes its documents' expectations, their sum goes into the same
        step on every rank (:mod:`lda.parallel`). ``where`` is the step's layout when the
        caller already has it (saves a collective)."""
        cfg = self.config
        if where is None:
            where = layout(reducer, batch.n_documents, batch.n_tokens)
        if where.documents == 0:
            raise ValueError("cannot learn from an empty minibatch")
        batch = Batch(batch.words.to(self.device), batch.offsets)
        if self.chain is not None:
            return self._lazy_update(batch, where, reducer)
        topic_word = self._expected_counts(
            self.beta, batch, where, _group(reducer), self.state.theta.dtype
        )
        stats = MinibatchStatistics(
            topic_word=topic_word, scale=self.corpus_size(where.documents) / where.documents
        )
        new_state, info = step(
            cfg.sampler, self.state, stats, cfg.hyper, self.step_size, self.generator
        )
        moving = [new_state.theta] + ([] if new_state.momentum is None else [new_state.momentum])
        if not _all_finite(*moving):
            raise NonFiniteError(f"non-finite theta after step {self.state.step + 1}")
        self.state = new_state
        self.mean.add(self.beta)
        self.docs_seen += where.documents
        self.tokens_seen += where.tokens
        return info

    def _expected_counts(
        self,
        beta: torch.Tensor,
        batch: Batch,
        where: Layout,
        group: Reducer | None,
        dtype: torch.dtype | None = None,
    ) -> torch.Tensor:
        """(K, beta's columns) sum over the minibatch's documents (every rank's, in a group) of
        E[n_dkw]: this rank's Gibbs expectations on ``beta``, in ``dtype``, summed over ranks."""
        topic_word = self._expectations(beta, batch, where).topic_word(beta.shape[1])
        if dtype is not None:
            topic_word = topic_word.to(dtype)
        if group is not None:
            # In place on the storage, whichever way round it is laid out.
            group.sum_(topic_word if topic_word.is_contiguous() else topic_word.T)
        return topic_word

    def _expectations(self, beta: torch.Tensor, batch: Batch, where: Layout) -> GibbsExpectations:
        """This rank's Gibbs expectations of ``batch`` on ``beta`` (the learner's sweeps)."""
        cfg = self.config
        assert cfg.gamma is not None and cfg.burn_in is not None and cfg.sweeps is not None
        assert cfg.gibbs is not None and cfg.gibbs_init is not None
        return gibbs_expectations(
            beta,
            batch,
            cfg.gamma,
            cfg.sweeps,
            cfg.burn_in,
            self.generator,
            cfg.gibbs,
            cfg.gibbs_backend,
            init=cfg.gibbs_init,
            shard=where.shard,
            kernel=cfg.gibbs_kernel,
            need_document_topic=False,
        )

    def _lazy_update(self, batch: Batch, where: Layout, reducer: Reducer | None) -> StepInfo:
        """SCIR's step on the minibatch's words only: bring their columns up to date, Gibbs on
        beta restricted to them (word ids renumbered), then the exact transition there. In a
        group the columns are the union of every rank's words (one all-reduce of a W-long
        mask) and only those columns' counts are summed. A non-finite step leaves the chain
        changed (it is stepped in place): the caller restores a checkpoint."""
        cfg = self.config
        chain = self.chain
        assert chain is not None
        self._lazy_reads.clear()  # the chain is about to change in place
        group = _group(reducer)
        if group is not None:
            mask = torch.zeros(cfg.n_words, dtype=torch.float32)
            mask[batch.words] = 1.0
            group.sum_(mask)
            columns = torch.nonzero(mask).squeeze(1)
            local = torch.searchsorted(columns, batch.words)
        else:
            columns_np, local_np = columns_of(batch.words.numpy(), cfg.n_words)
            columns, local = torch.from_numpy(columns_np), torch.from_numpy(local_np)
        chain.catch_up(columns, self.generator)
        beta = chain.beta_columns(columns)
        mine = Batch(local, batch.offsets)
        if group is None:
            # The kernel's kept-sweep sums as they are, 1/kept folded into the scale.
            topic_word, kept = self._expectations(beta, mine, where).topic_word_kept_sums(
                int(columns.numel())
            )
        else:
            # A group sums the counts in the chain's dtype: float32 halves what crosses the wire.
            dtype = getattr(torch, cfg.dtype)
            topic_word, kept = self._expected_counts(beta, mine, where, group, dtype), 1
        scale = self.corpus_size(where.documents) / where.documents / kept
        if not chain.advance(columns, topic_word, scale, self.step_size, self.generator):
            raise NonFiniteError(f"non-finite theta after step {self.state.step + 1}")
        if chain.due_for_sync():
            chain.sync(self.generator)
        self.state = replace(self.state, step=self.state.step + 1)
        self.docs_seen += where.documents
        self.tokens_seen += where.tokens
        return StepInfo(reflected=0, zero_guarded=0)

    def test_token_probabilities(self, heldout: HeldoutSet) -> torch.Tensor:
        """p(w | d) of the held-out test tokens under the current sample."""
        scoring = self.scorer_config
        return _test_token_probabilities(
            self.beta,
            heldout,
            scoring.gamma,
            scoring.sweeps,
            scoring.burn_in,
            self.eval_generator,
            scoring.method,
        )

    @property
    def scorer_config(self) -> ScorerConfig:
        """The held-out estimator of this learner's configuration."""
        cfg = self.config
        assert cfg.gamma is not None
        return ScorerConfig(gamma=cfg.gamma, sweeps=cfg.eval_sweeps, method=cfg.eval_gibbs)

    def scorer(self) -> HeldoutScorer:
        """A scorer over this learner's evaluation generator and posterior average (shared)."""
        return HeldoutScorer(self.scorer_config, self.eval_generator, self.posterior_average)

    def evaluate(self, heldout: HeldoutSet, which: Estimate = "mean") -> tuple[float, float]:
        """(perplexity of the ``which`` estimate, posterior-averaged perplexity) on ``heldout``;
        by default beta_mean, the topics a user of the model gets."""
        return self.scorer().score(self.estimate(which), heldout)

    def top_words(self, n: int, which: Estimate = "mean") -> tuple[torch.Tensor, torch.Tensor]:
        """(K, n) word ids and their weights in the ``which`` estimate, most probable first.
        The lazy chain's mean is ranked in one read of the chain, with no (K, W) result; its
        sample among the mean's top words (see SAMPLE_CANDIDATES)."""
        n = min(n, self.config.n_words)
        if self.chain is not None and which == "mean":
            ids, weights = self._lazy_top(n)
            return ids[:, :n], weights[:, :n]
        if self.chain is not None:
            # The sample's top words among the mean's top SAMPLE_CANDIDATES x n: a full sample
            # is O(K W) draws, and a word outside the mean's head is rarely in a sample's.
            candidates, _ = self._lazy_top(n)
            weights, order = torch.topk(self.sample_at(candidates), k=n, dim=1)
            return candidates.gather(1, order), weights
        weights, ids = torch.topk(self.estimate(which), k=n, dim=1)
        return ids, weights

    def _lazy_top(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The lazy chain's mean ranked SAMPLE_CANDIDATES x n deep, in one pass per step that
        both rankings of :meth:`top_words` read."""
        chain = self.chain
        assert chain is not None
        dtype = getattr(torch, self.config.dtype)
        deep = min(SAMPLE_CANDIDATES * n, self.config.n_words)
        return self._lazy_read(f"top_mean:{deep}", lambda: chain.top_mean(deep, dtype))

    def sample_at(self, word_ids: torch.Tensor) -> torch.Tensor:
        """(K, M) the chain's current sample of beta at (k, word_ids[k, i]): for the lazy
        chain without drawing the other columns (see
        :meth:`lda.sgmcmc.scir.lazy.LazyChain.sample_at`)."""
        if self.chain is not None:
            return self.chain.sample_at(word_ids, self._peek(), getattr(torch, self.config.dtype))
        return self.beta.gather(1, word_ids.to(self.device))

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: chain, counters, RNG states, averages."""
        return {
            "config": self.config.to_dict(),
            "seed": self.seed,  # keys the lazy chain's reads (absent from older checkpoints: 0)
            "theta": self.state.theta,
            "momentum": self.state.momentum,
            "step": self.state.step,
            "docs_seen": self.docs_seen,
            "tokens_seen": self.tokens_seen,
            "generator": self.generator.get_state(),
            "eval_generator": self.eval_generator.get_state(),
            "posterior_average": self.posterior_average.state_dict(),
            "mean": self.mean.state_dict(),
            "lazy": None if self.chain is None else self.chain.state_dict(),
        }

    @classmethod
    def from_state_dict(
        cls, state: dict[str, Any], device: torch.device | str = "cpu"
    ) -> StreamingLDA:
        """Rebuild a learner saved with :meth:`state_dict`, on ``device``, around the state's
        own matrices (a lazy chain's are taken as they are)."""
        momentum = state["momentum"]
        lazy = state.get("lazy")
        chain = None if lazy is None else LazyChain.from_state_dict(lazy)
        restored = SamplerState(
            theta=state["theta"].to(device) if chain is None else chain.theta,
            momentum=None if momentum is None else momentum.to(device),
            step=int(state["step"]),
        )
        config = LearnerConfig.from_dict(state["config"])
        model = cls(config, device, int(state.get("seed", 0)), state=restored, chain=chain)
        model.docs_seen = int(state["docs_seen"])
        model.tokens_seen = int(state["tokens_seen"])
        model.generator.set_state(state["generator"])
        model.eval_generator.set_state(state["eval_generator"])
        average = dict(state["posterior_average"])
        if isinstance(average.get("total"), torch.Tensor):
            average["total"] = average["total"].to(model.device)
        model.posterior_average.load_state_dict(average)
        mean = state.get("mean")  # absent from checkpoints older than beta_mean: start afresh
        if mean is not None and mean["total"] is not None:
            model.mean.load_state_dict({**mean, "total": mean["total"].to(model.device)})
        return model
