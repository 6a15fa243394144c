"""The mathematics of streamlda: expanded-mean LDA learned online with SG-MCMC (docs/model.md).

No Redis, no HTTP, no global state; randomness comes in as explicit generators. The only file
I/O is a vocabulary's ``load``/``save``, when a caller asks for it. The rooms:

* :mod:`lda.sgmcmc`: the samplers (a step, their D(z) and Q(z), the recipe oracle, gradient,
  schedules, averaging, SGRHMC's split) and SCIR with its lazy chain (:mod:`lda.sgmcmc.scir`);
* :mod:`lda.gibbs`: the Gibbs expectations of a minibatch, one way in over every kernel;
* :mod:`lda.evaluation`: held-out perplexity, its scorer, coherence, drift and uncertainty.

At the top: the learner (:mod:`lda.model`), its configuration (:mod:`lda.config`, no torch),
minibatches, data parallelism, the vocabulary, and inference for new texts with its compiled,
torch-free twins (:mod:`lda.tokens`, :mod:`lda.inference_kernel`) that ``/infer`` uses.

The public names below load on first use, so ``import lda.config`` stays free of torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_PUBLIC = {
    "StreamingLDA": "lda.model",
    "NonFiniteError": "lda.model",
    "resolve_device": "lda.model",
    "LearnerConfig": "lda.config",
    "DEFAULTS": "lda.config",
    "Batch": "lda.batch",
    "Vocabulary": "lda.vocab",
    "build_vocabulary": "lda.vocab",
    "tokenize": "lda.vocab",
    "infer_topics": "lda.inference",
    "SAMPLERS": "lda.sgmcmc.samplers",
    "SamplerState": "lda.sgmcmc.samplers",
    "init_state": "lda.sgmcmc.samplers",
    "step": "lda.sgmcmc.samplers",
    "recipe_step": "lda.sgmcmc.recipe",
    "GibbsConfig": "lda.gibbs.config",
    "GibbsExpectations": "lda.gibbs.result",
    "gibbs_expectations": "lda.gibbs.expectations",
    "HeldoutSet": "lda.evaluation.perplexity",
    "perplexity": "lda.evaluation.perplexity",
    "HeldoutScorer": "lda.evaluation.scorer",
    "npmi_coherence": "lda.evaluation.coherence",
    "topic_diversity": "lda.evaluation.coherence",
    "topic_drift": "lda.evaluation.drift",
}
__all__ = [
    "DEFAULTS",
    "SAMPLERS",
    "Batch",
    "GibbsConfig",
    "GibbsExpectations",
    "HeldoutScorer",
    "HeldoutSet",
    "LearnerConfig",
    "NonFiniteError",
    "SamplerState",
    "StreamingLDA",
    "Vocabulary",
    "build_vocabulary",
    "gibbs_expectations",
    "infer_topics",
    "init_state",
    "npmi_coherence",
    "perplexity",
    "recipe_step",
    "resolve_device",
    "step",
    "tokenize",
    "topic_diversity",
    "topic_drift",
]

if TYPE_CHECKING:
    from lda.batch import Batch
    from lda.config import DEFAULTS, LearnerConfig
    from lda.evaluation.coherence import npmi_coherence, topic_diversity
    from lda.evaluation.drift import topic_drift
    from lda.evaluation.perplexity import HeldoutSet, perplexity
    from lda.evaluation.scorer import HeldoutScorer
    from lda.gibbs.config import GibbsConfig
    from lda.gibbs.expectations import gibbs_expectations
    from lda.gibbs.result import GibbsExpectations
    from lda.inference import infer_topics
    from lda.model import NonFiniteError, StreamingLDA, resolve_device
    from lda.sgmcmc.recipe import recipe_step
    from lda.sgmcmc.samplers import SAMPLERS, SamplerState, init_state, step
    from lda.vocab import Vocabulary, build_vocabulary, tokenize


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'lda' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
