"""The learner's configuration and every sampler's default settings, without torch.

What a learner is (:class:`LearnerConfig`) and the defaults it takes from its sampler
(:data:`DEFAULTS`: the paper's values, except where the benchmark found better; why each is
what it is: docs/defaults.md) live here, apart from the samplers' steps
(:mod:`lda.sgmcmc.samplers`), so that a process that only reads settings (a scraper,
``--help``) does not load torch and numba.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from lda.sgmcmc.hyper import Hyper
from lda.sgmcmc.schedules import BatchScaling, StepSchedule

SamplerName = Literal["sgld", "sghmc", "sgrld", "sgrhmc", "scir"]
# How the Gibbs expectations are taken (lda.gibbs.expectations).
Method = Literal["exact", "rao-blackwell", "uncollapsed"]
# auto: the CUDA kernel when beta is on a CUDA device numba can compile for, else the CPU kernel;
# cpu: the compiled CPU kernel whatever the device; torch: its per-position twin (tests);
# cuda: the CUDA kernel (CPU tensors: under numba's simulator, or on a device if present).
Backend = Literal["auto", "cpu", "torch", "cuda"]
# The kernel of the collapsed methods (lda.gibbs.expectations): dense is O(K) per token-sweep,
# sparse O(K_d), the topics a document uses; auto picks by K and W on the CPU and dense on a
# CUDA device.
Kernel = Literal["auto", "dense", "sparse"]
# Each minibatch's fresh start: every token's topic uniform, or drawn from p(k | w) ∝ beta_kw.
Init = Literal["uniform", "beta"]


def default_burn_in(sweeps: int) -> int:
    """Sweeps discarded when none is given: the first half (the learner's and the held-out
    perplexity function's default; the held-out scorer's is
    lda.evaluation.scorer.BURN_IN_SHARE)."""
    return sweeps // 2


# Which topics: "mean" is StreamingLDA.beta_mean (served), "sample" StreamingLDA.beta (the
# chain's state).
Estimate = Literal["mean", "sample"]
# A topic whose divergence (bits) since the last evaluation exceeds this changed
# (lda.evaluation.drift).
CHANGED_BITS = 0.05


@dataclass(frozen=True)
class SamplerDefaults:
    """A sampler's default settings."""

    alpha: float
    gamma: float
    schedule: StepSchedule
    # A few Rao-Blackwellised sweeps serve topics as good as many exact ones, for a fraction of
    # the cost (docs/defaults.md, "Gibbs method and sweeps").
    gibbs: Method = "rao-blackwell"
    gibbs_init: Init = "uniform"  # each minibatch's start
    sweeps: int = 6
    # How the default schedule and mean decay follow larger minibatches (None: not measured,
    # the defaults stay whatever the minibatch).
    batch_scaling: BatchScaling | None = None
    # beta_mean's decay per step at the reference minibatch: it weighs ~1/(1 - decay) samples.
    mean_decay: float = 0.97


# A seed word's strength: the percent of an average topic's tokens over the N documents the
# chain stands for that its pseudo-counts are (lda.sgmcmc.seeds.pseudo_counts; why 2:
# docs/defaults.md, "Seed strength"); and the tokens per document assumed before any is seen
# (DEV's average at W = 50,000).
SEED_STRENGTH = 2.0
SEED_TOKENS_PER_DOCUMENT = 473.0

DEFAULTS: dict[str, SamplerDefaults] = {
    "sgld": SamplerDefaults(alpha=0.01, gamma=0.1, schedule=StepSchedule(0.01)),
    "sghmc": SamplerDefaults(alpha=0.01, gamma=0.1, schedule=StepSchedule(0.1)),
    "sgrld": SamplerDefaults(
        alpha=1e-4,
        gamma=0.03,  # paper 0.01; measured with the step below and n = 100 documents
        schedule=StepSchedule(0.03, 1000.0, 0.55),  # paper 0.01: a larger step mixes the mean
        # a ~ sqrt(n) served better than an unscaled step or a ~ n at large minibatches
        # (docs/defaults.md, "Minibatch size and batch scaling")
        batch_scaling=BatchScaling(reference=100, power=0.5),
    ),
    "sgrhmc": SamplerDefaults(
        alpha=1e-4,
        gamma=0.01,
        # paper 0.02; the best of a grid of constant steps at the stream's N, where the larger
        # step that was best at N = 10,000 serves incoherent topics (docs/defaults.md, "SGRLD
        # and SGRHMC")
        schedule=StepSchedule(0.05),
        # Exact indicator counts: Rao-Blackwellised ones make c = alpha - 1/2 + (N/n) E[n_kw]
        # slightly positive on every word of the minibatch, where the split flow stops a
        # coordinate at its (exponentially deep) turning point; with alpha = 0.5 that failed
        # tests/lda/test_recovery.py.
        gibbs="exact",
        sweeps=50,
        # a ~ sqrt(n) keeps large minibatches near n = 100's quality; a ~ n diverged
        batch_scaling=BatchScaling(reference=100, power=0.5),
    ),
    "scir": SamplerDefaults(
        # Chosen together for the stream's N and a real vocabulary: a step that decays early
        # and a long mean remember enough minibatches for 50,000 words, where the earlier
        # values, tuned at N = 10,000, forgot them within a few steps (docs/defaults.md,
        # "SCIR's step schedule, alpha and gamma"; docs/samplers.md, "Defaults: what the chain
        # and the mean remember")
        alpha=1.0,
        gamma=0.03,
        schedule=StepSchedule(0.3, 30.0, 0.7),
        mean_decay=0.995,
        # h ~ n: the same process time per document (an exact step has no stability limit),
        # which served better than h ~ sqrt(n) or an unscaled h (docs/defaults.md, "Minibatch
        # size and batch scaling")
        batch_scaling=BatchScaling(reference=100, power=1.0),
        # each minibatch starts from beta's p(k | w): slightly better topics, and fewer topics
        # per document for the sparse kernel (docs/defaults.md, "gibbs_init: a start from beta")
        gibbs_init="beta",
    ),
}
assert set(get_args(SamplerName)) == set(DEFAULTS), "SamplerName names every sampler"


def scaled_defaults(sampler: str, documents_per_step: int) -> tuple[StepSchedule, float]:
    """The sampler's default step schedule and beta_mean decay for minibatches of
    ``documents_per_step`` (per rank times ranks): its BatchScaling rule where it has one,
    else the defaults as they are. The one place a default follows the minibatch."""
    spec = DEFAULTS[sampler]
    scaling = spec.batch_scaling
    if scaling is None:
        return spec.schedule, spec.mean_decay
    n = documents_per_step
    return scaling.schedule(spec.schedule, n), scaling.mean_decay(spec.mean_decay, n)


@dataclass(frozen=True)
class LearnerConfig:
    """Everything that defines the learner; the paper's values fill what is left unset."""

    n_topics: int
    n_words: int
    sampler: str = "sgrld"
    alpha: float | None = None
    gamma: float | None = None  # the document-topic prior's (symmetric) start
    # Learn an asymmetric gamma_k from the stream (lda.prior; docs/model.md, "The learned
    # document-topic prior"); False keeps the symmetric gamma (--fixed-gamma).
    learn_gamma: bool = False
    # Topics live at the start, in the first slots; n_topics is then the slots, the most there
    # can be (None: every slot live, K fixed). The others wait free (lda.topic_ids).
    live_topics: int | None = None
    schedule: StepSchedule | None = None
    friction: float = 1.0
    corpus_size: float = 10_000.0
    corpus_growth: bool = False  # N = max(corpus_size, documents seen), as online VB does
    sweeps: int | None = None  # Gibbs sweeps per minibatch (default: the sampler's)
    burn_in: int | None = None
    gibbs: Method | None = None  # (default: the sampler's)
    # Each minibatch's fresh start: every token's topic uniform, or drawn from p(k | w) ∝ beta_kw
    # (fewer topics per document from the first sweep: the sparse kernel's cost); the sampler's.
    gibbs_init: Init | None = None
    # Where the training Gibbs sweeps run (Backend above): "auto" is the compiled CPU kernel on
    # the CPU and the CUDA kernel when the model is on a CUDA device; "cpu" keeps them in the
    # CPU kernel whatever the device.
    gibbs_backend: Backend = "auto"
    gibbs_kernel: Kernel = "auto"  # the collapsed methods' kernel (Kernel above)
    # The held-out estimator (docs/heldout.md), whatever trains: Rao-Blackwellised sweeps from
    # a start drawn from beta come closer to a long exact reference than exact sweeps from a
    # uniform start, in less time (docs/defaults.md, "The held-out estimator").
    eval_gibbs: Method = "rao-blackwell"
    eval_sweeps: int = 20
    # beta_mean: exponential mean of the samples (0: the last one); default: the sampler's
    mean_decay: float | None = None
    dtype: str = "float64"

    def __post_init__(self) -> None:
        if self.sampler not in DEFAULTS:
            raise ValueError(f"unknown sampler {self.sampler!r}: choose from {sorted(DEFAULTS)}")
        spec = DEFAULTS[self.sampler]
        object.__setattr__(self, "alpha", spec.alpha if self.alpha is None else self.alpha)
        object.__setattr__(self, "gamma", spec.gamma if self.gamma is None else self.gamma)
        object.__setattr__(self, "schedule", self.schedule or spec.schedule)
        object.__setattr__(self, "sweeps", spec.sweeps if self.sweeps is None else self.sweeps)
        object.__setattr__(self, "gibbs", spec.gibbs if self.gibbs is None else self.gibbs)
        if self.gibbs_init is None:
            object.__setattr__(self, "gibbs_init", spec.gibbs_init)
        if self.gibbs_init not in get_args(Init):
            choices = get_args(Init)
            raise ValueError(f"unknown gibbs_init {self.gibbs_init!r}: choose from {choices}")
        assert self.sweeps is not None
        burn = default_burn_in(self.sweeps) if self.burn_in is None else self.burn_in
        if not 0 <= burn < self.sweeps:
            raise ValueError(f"burn_in must be in [0, sweeps), got {burn} with {self.sweeps}")
        object.__setattr__(self, "burn_in", burn)
        if self.gibbs_backend not in get_args(Backend):
            raise ValueError(
                f"unknown gibbs_backend {self.gibbs_backend!r}: choose from {get_args(Backend)}"
            )
        if self.gibbs_kernel not in get_args(Kernel):
            raise ValueError(
                f"unknown gibbs_kernel {self.gibbs_kernel!r}: choose from {get_args(Kernel)}"
            )
        if self.live_topics is not None and not 1 <= self.live_topics <= self.n_topics:
            raise ValueError(
                f"live_topics must be in [1, n_topics = {self.n_topics}], got {self.live_topics}"
            )
        if self.mean_decay is None:
            object.__setattr__(self, "mean_decay", spec.mean_decay)
        assert self.mean_decay is not None
        if not 0.0 <= self.mean_decay < 1.0:
            raise ValueError(f"mean_decay must be in [0, 1), got {self.mean_decay}")

    @property
    def hyper(self) -> Hyper:
        assert self.alpha is not None and self.gamma is not None
        return Hyper(alpha=self.alpha, gamma=self.gamma, friction=self.friction)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LearnerConfig:
        data = dict(data)
        if isinstance(data.get("schedule"), dict):
            data["schedule"] = StepSchedule(**data["schedule"])
        data.pop("extra", None)  # a field of older checkpoints, never used
        return cls(**data)
