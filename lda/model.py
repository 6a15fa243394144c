"""StreamingLDA: the thin stateful class over the functional core (like torch.optim's classes).

One ``update(batch)`` runs Gibbs expectations with the current beta and one sampler step;
``evaluate`` scores a held-out set. The sampler's state and its step are a chain's
(:mod:`lda.sgmcmc.chain`: dense, or SCIR's lazy columns on the CPU), chosen once. Two estimates
of the topics: ``beta``, the chain's current sample, and ``beta_mean``, the mean of recent
samples, which estimates E[beta | data] better (so it is what ``evaluate`` and ``top_words``
take unless told otherwise). Randomness comes from two explicit generators (training and
evaluation), so evaluating does not change the training trajectory; both are part of
``state_dict`` so a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from lda.batch import Batch
from lda.config import (  # their home: lda.config (no torch); imported from here too
    Estimate,
    LearnerConfig,
)
from lda.evaluation.perplexity import HeldoutSet, PosteriorAverage
from lda.evaluation.perplexity import test_token_probabilities as _test_token_probabilities
from lda.evaluation.scorer import HeldoutScorer, ScorerConfig
from lda.gamma import Gamma
from lda.gibbs import GibbsConfig, GibbsExpectations, gibbs_expectations
from lda.gibbs.result import widen
from lda.parallel import Layout, Reducer, layout
from lda.prior import LearnedPrior
from lda.sgmcmc.chain import new_chain, restore_chain
from lda.sgmcmc.columns import ColumnMap
from lda.sgmcmc.minibatch import Chain, Minibatch
from lda.sgmcmc.samplers import (  # its home: the samplers; imported from here too
    NonFiniteError as NonFiniteError,
)
from lda.sgmcmc.samplers import SamplerState, StepInfo
from lda.sgmcmc.seeds import SeedPrior
from lda.topic_ids import TopicIds


def resolve_device(name: str) -> torch.device:
    """``auto`` picks CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name} was asked for but no CUDA device is available")
    return device


def revisit_step_scale(ratio: float) -> float:
    """A revisit step's share of the stream's step when up to ``ratio`` revisited documents
    follow each fresh one (docs/samplers.md, "Revisiting a reservoir")."""
    return 1.0 / (1.0 + ratio)


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
        chain: Chain | None = None,
        prior: LearnedPrior | None = None,
        topic_ids: TopicIds | None = None,
    ):
        """A learner drawn afresh from the prior, or one that goes on from ``chain``, ``prior``
        and ``topic_ids`` as :meth:`from_state_dict` restores them: no fresh K x W draw made
        only to be replaced. Without ``prior`` the free slots start at a new one's floor."""
        self.config = config
        self.device = torch.device(device)
        self.seed = seed
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.eval_generator = torch.Generator(device=self.device).manual_seed(seed + 1)
        # Lazy SCIR on the CPU (a step costs O(K x the minibatch's words)), else the dense
        # chain: lda.sgmcmc.chain.is_lazy.
        self.chain: Chain = (
            new_chain(config, self.device, self.generator, seed) if chain is None else chain
        )
        self.posterior_average = PosteriorAverage()
        self.docs_seen = 0  # fresh documents learned (a revisit does not count again)
        self.tokens_seen = 0
        self.revisit_steps = 0  # steps taken on documents seen before (docs/samplers.md)
        self.revisited_docs = 0
        assert config.gamma is not None
        # gamma_k (K,), learned from the stream or held at the symmetric start (lda.prior)
        self.prior = (
            prior
            if prior is not None
            else LearnedPrior(config.gamma, config.n_topics, config.learn_gamma)
        )
        self._prior_sums: tuple[torch.Tensor, float, int] | None = None
        # which slots hold a live topic and the number each is known by (lda.topic_ids)
        live = config.n_topics if config.live_topics is None else config.live_topics
        self.topic_ids = (
            topic_ids if topic_ids is not None else TopicIds.start(config.n_topics, live)
        )
        if prior is None:  # a new prior: free slots at its floor
            self._floor_free_slots()

    def _floor_free_slots(self) -> None:
        """Free slots' gamma_k at the prior's floor: a free slot takes next to no tokens."""
        free = self.topic_ids.free_slots()
        if free:
            gamma = self.prior.gamma.clone()
            gamma[free] = self.prior.schedule.floor
            self.prior.gamma = gamma

    @property
    def gamma(self) -> Gamma:
        """The document-topic prior every consumer takes: the scalar while symmetric, else
        gamma_k as a tuple (lda.gamma)."""
        return self.prior.value

    @property
    def live_index(self) -> torch.Tensor | None:
        """(L,) the slots that hold a live topic, or None when every slot does."""
        live = self.topic_ids.live_slots()
        if len(live) == self.config.n_topics:
            return None
        return torch.tensor(live, dtype=torch.int64)

    @property
    def live_gamma(self) -> Gamma:
        """gamma of the live topics only, as the kernels take it (lda.gamma): while every slot
        is live, :attr:`gamma` itself (the scalar while symmetric, else the tuple)."""
        live = self.topic_ids.live_slots()
        values = [float(self.prior.gamma[k]) for k in live]
        return values[0] if all(v == values[0] for v in values) else tuple(values)

    def live(self, beta: torch.Tensor) -> torch.Tensor:
        """The live topics' rows of a (K, ...) matrix (``beta`` itself when all are live)."""
        live = self.live_index
        return beta if live is None else beta[live.to(beta.device)]

    @property
    def state(self) -> SamplerState:
        """The chain's theta (K, W), momentum and step count (do not modify them)."""
        return self.chain.state

    @property
    def beta(self) -> torch.Tensor:
        """(K, W) topic-word probabilities of the current sample (do not modify it), computed
        once per step."""
        return self.chain.beta

    @property
    def beta_mean(self) -> torch.Tensor:
        """(K, W) posterior-mean estimate of beta: the exponential mean of the samples after each
        step (``mean_decay``), the current sample before the first step. Rows sum to 1. A
        tensor of its own: later steps leave it as it is (a reader may keep it)."""
        return self.chain.beta_mean

    @property
    def whole_reads_cost_draws(self) -> bool:
        """Reading the whole sample (:attr:`beta`) draws every column a step did not touch (the
        lazy chain): a pass over K x W with a random draw each, not a division."""
        return self.chain.whole_reads_cost_draws

    def estimate(self, which: Estimate = "mean") -> torch.Tensor:
        """(K, W) beta_mean (``mean``) or the current sample (``sample``)."""
        return self.beta_mean if which == "mean" else self.beta

    @property
    def step_size(self) -> float:
        """The schedule's step at the stream's position: revisits do not advance it."""
        assert self.config.schedule is not None
        return self.config.schedule(self.state.step - self.revisit_steps)

    def corpus_size(self, n_documents: int) -> float:
        """N in the gradient's N/n: fixed, or growing with the documents seen (this batch too,
        when fresh: ``n_documents`` 0 for a revisit)."""
        if self.config.corpus_growth:
            return max(self.config.corpus_size, float(self.docs_seen + n_documents))
        return self.config.corpus_size

    def update(
        self,
        batch: Batch,
        reducer: Reducer | None = None,
        where: Layout | None = None,
        *,
        revisit: bool = False,
        step_scale: float = 1.0,
        documents: Callable[[torch.Tensor], None] | None = None,
    ) -> StepInfo:
        """Learn from one minibatch: Gibbs expectations, then one sampler step.

        With a ``reducer`` the minibatch is the union of every rank's ``batch`` (one may be
        empty): each rank computes its documents' expectations, their sum goes into the same
        step on every rank (:mod:`lda.parallel`). ``where`` is the step's layout when the
        caller already has it (saves a collective). A ``revisit`` is a minibatch of documents
        learned before: the same step at the stream's N, its step size times ``step_scale``,
        counted apart from the documents seen (docs/samplers.md, "Revisiting a reservoir").
        ``documents``, when given, receives this rank's documents' expected topic counts
        E[n_dk] ((n, K) float64) from the same sweeps the step learns from."""
        if where is None:
            where = layout(reducer, batch.n_documents, batch.n_tokens)
        if where.documents == 0:
            raise ValueError("cannot learn from an empty minibatch")
        at: Layout = where
        live = self.live_index
        minibatch = Minibatch(
            batch=Batch(batch.words.to(self.device), batch.offsets),
            expectations=lambda beta, docs: self._expectations(beta, docs, at, documents, live),
            group=_group(reducer),
            scale=self.corpus_size(0 if revisit else where.documents) / where.documents,
            rows=live,
        )
        self._prior_sums = None
        info = self.chain.update(minibatch, self.step_size * step_scale, self.generator)
        self._learn_prior(reducer, fresh=not revisit)
        if revisit:
            self.revisit_steps += 1
            self.revisited_docs += where.documents
        else:
            self.docs_seen += where.documents
            self.tokens_seen += where.tokens
        return info

    def _expectations(
        self,
        beta: torch.Tensor,
        batch: Batch,
        where: Layout,
        documents: Callable[[torch.Tensor], None] | None,
        live: torch.Tensor | None,
    ) -> GibbsExpectations:
        """This rank's Gibbs expectations of ``batch`` on ``beta`` (the learner's sweeps) over
        the ``live`` slots (None: every slot), the document sums too when ``documents`` wants
        them."""
        gamma = self.gamma if live is None else self.live_gamma
        sweeps = dataclasses.replace(GibbsConfig.from_learner(self.config), gamma=gamma)
        learning = self.prior.learn
        if documents is not None or learning:
            sweeps = dataclasses.replace(sweeps, need_document_topic=True)
        if live is None:
            result = gibbs_expectations(beta, batch, sweeps, self.generator, where.shard)
        else:  # free slots take no part: their rows get no tokens
            rows = live.to(beta.device)
            result = gibbs_expectations(beta[rows], batch, sweeps, self.generator, where.shard)
            result = widen(result, live, self.config.n_topics, beta.shape[1])
        if documents is not None or learning:
            counts = result.document_topic().to(torch.float64)
            if documents is not None:
                documents(counts)
            if learning and self._prior_sums is None:  # the step's first call's sweeps
                self._prior_sums = self.prior.sums(counts.cpu())
        return result

    def _learn_prior(self, reducer: Reducer | None, fresh: bool) -> None:
        """One stochastic fixed-point step of gamma from this minibatch's document sums,
        summed over the group's ranks (fresh documents only: a revisit would count them
        again)."""
        sums, self._prior_sums = self._prior_sums, None
        if not self.prior.learn:
            return
        K = self.config.n_topics
        num, den, n = sums if sums is not None else (torch.zeros(K, dtype=torch.float64), 0.0, 0)
        group = _group(reducer)
        if group is not None:  # every rank calls this, so the collective lines up
            packed = torch.cat([num, torch.tensor([den, float(n)], dtype=torch.float64)])
            packed = packed.to(self.device)
            group.sum_(packed)
            packed = packed.cpu()
            num, den, n = packed[:K], float(packed[K]), round(float(packed[K + 1]))
        if fresh:
            self.prior.observe(num, den, n)

    def test_token_probabilities(self, heldout: HeldoutSet) -> torch.Tensor:
        """p(w | d) of the held-out test tokens under the current sample."""
        sweeps = self.scorer_config.gibbs
        return _test_token_probabilities(self.live(self.beta), heldout, sweeps, self.eval_generator)

    @property
    def scorer_config(self) -> ScorerConfig:
        """The held-out estimator of this learner's configuration (over the live topics:
        score :meth:`live` rows with it)."""
        cfg = self.config
        return ScorerConfig(gamma=self.live_gamma, sweeps=cfg.eval_sweeps, method=cfg.eval_gibbs)

    def scorer(self) -> HeldoutScorer:
        """A scorer over this learner's evaluation generator and posterior average (shared)."""
        return HeldoutScorer(self.scorer_config, self.eval_generator, self.posterior_average)

    def evaluate(self, heldout: HeldoutSet, which: Estimate = "mean") -> tuple[float, float]:
        """(perplexity of the ``which`` estimate, posterior-averaged perplexity) on ``heldout``;
        by default beta_mean, the topics a user of the model gets (the live ones)."""
        return self.scorer().score(self.live(self.estimate(which)), heldout)

    def top_words(self, n: int, which: Estimate = "mean") -> tuple[torch.Tensor, torch.Tensor]:
        """(K, n) word ids and their weights in the ``which`` estimate, most probable first
        (the lazy chain ranks them without a (K, W) result: lda.sgmcmc.scir.chain)."""
        return self.chain.top_words(min(n, self.config.n_words), which)

    def sample_at(self, word_ids: torch.Tensor) -> torch.Tensor:
        """(K, M) the chain's current sample of beta at (k, word_ids[k, i]): for the lazy
        chain without drawing the other columns (lda.sgmcmc.scir.lazy.LazyChain.sample_at)."""
        return self.chain.sample_at(word_ids)

    @property
    def seeds(self) -> SeedPrior:
        """The seed words' priors: alpha_kw = alpha + s_kw at these coordinates."""
        return self.chain.seeds

    def set_seeds(self, seeds: SeedPrior) -> None:
        """Learn under ``seeds`` from the next step on (docs/model.md, "Seeded topics"):
        the posterior changes, the chain's state does not."""
        K, W = self.config.n_topics, self.config.n_words
        if len(seeds) and (
            int(seeds.topics.min()) < 0
            or int(seeds.topics.max()) >= K
            or int(seeds.words.min()) < 0
            or int(seeds.words.max()) >= W
        ):
            raise ValueError(f"a seed names a topic outside [0, {K}) or a word outside [0, {W})")
        self.chain.set_seeds(seeds)

    def remap_vocabulary(
        self, keep: torch.Tensor, generator: torch.Generator | None = None
    ) -> None:
        """Move to a new vocabulary of ``len(keep)`` words: ``keep[j]`` is new word j's old
        column, or -1 for a word that enters (:func:`lda.remap.remap_indices` makes it).
        Kept columns carry their theta, momentum, mean and (lazy chain) clocks; entering ones
        start from the law of a column no data has touched, drawn with ``generator`` (the
        training generator by default, so a resumed run remaps as an uninterrupted one);
        leaving ones go (docs/model.md, "When the vocabulary changes"). The posterior average
        of held-out scores starts over: the held-out tokens must be re-encoded."""
        columns = ColumnMap.of(keep, self.config.n_words)
        self.chain.remap(columns, self.generator if generator is None else generator)
        self.config = dataclasses.replace(self.config, n_words=columns.n_new)
        self.posterior_average = PosteriorAverage()

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: chain, counters, RNG states, averages."""
        chain = self.chain.state_dict()
        return {
            "config": self.config.to_dict(),
            "seed": self.seed,  # keys the lazy chain's reads (absent from older checkpoints: 0)
            "theta": chain["theta"],
            "momentum": chain["momentum"],
            "step": chain["step"],
            "docs_seen": self.docs_seen,
            "tokens_seen": self.tokens_seen,
            "revisit_steps": self.revisit_steps,  # absent from older checkpoints: 0
            "revisited_docs": self.revisited_docs,
            "generator": self.generator.get_state(),
            "eval_generator": self.eval_generator.get_state(),
            "posterior_average": self.posterior_average.state_dict(),
            "mean": chain["mean"],
            "lazy": chain["lazy"],
            "seeds": self.chain.seeds.state_dict(),
            "prior": self.prior.state_dict(),  # absent from older checkpoints: symmetric gamma
            "topic_ids": self.topic_ids.state_dict(),  # absent from older checkpoints: fixed K
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go back to a state :meth:`state_dict` saved, in place (a rejected topic move: every
        holder of this learner sees the old state)."""
        self.__dict__.update(type(self).from_state_dict(state, self.device).__dict__)

    @classmethod
    def from_state_dict(
        cls, state: dict[str, Any], device: torch.device | str = "cpu"
    ) -> StreamingLDA:
        """Rebuild a learner saved with :meth:`state_dict`, on ``device``, around the state's
        own matrices (lda.sgmcmc.chain.restore_chain)."""
        config = LearnerConfig.from_dict(state["config"])
        seed = int(state.get("seed", 0))
        assert config.gamma is not None
        # Absent from older checkpoints: the prior (a symmetric gamma) and the topic numbers (K
        # fixed); without both, the free slots start at the prior's floor as a new learner's.
        saved_prior, saved_ids = state.get("prior"), state.get("topic_ids")
        prior = None
        if saved_prior is not None or saved_ids is not None:
            prior = LearnedPrior.from_state_dict(
                saved_prior, config.gamma, config.n_topics, config.learn_gamma
            )
        ids = None
        if saved_ids is not None:
            ids = TopicIds.from_state_dict(saved_ids)
            if ids.n_slots != config.n_topics:
                raise ValueError(
                    f"the saved topic numbers cover {ids.n_slots} slots, "
                    f"the learner has {config.n_topics}"
                )
        chain = restore_chain(config, state, torch.device(device), seed)
        model = cls(config, device, seed, chain=chain, prior=prior, topic_ids=ids)
        chain.set_seeds(SeedPrior.from_state_dict(state.get("seeds")))  # absent before seeds
        model.docs_seen = int(state["docs_seen"])
        model.tokens_seen = int(state["tokens_seen"])
        model.revisit_steps = int(state.get("revisit_steps", 0))
        model.revisited_docs = int(state.get("revisited_docs", 0))
        model.generator.set_state(state["generator"])
        model.eval_generator.set_state(state["eval_generator"])
        average = dict(state["posterior_average"])
        if isinstance(average.get("total"), torch.Tensor):
            average["total"] = average["total"].to(model.device)
        model.posterior_average.load_state_dict(average)
        return model
