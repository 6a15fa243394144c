"""Gibbs expectations of a minibatch's topic counts with beta fixed (docs/model.md, Eq. S.19):
one way in (:func:`gibbs_expectations` over a :class:`GibbsConfig`) and one dispatch over the
torch reference, the dense and sparse CPU kernels and their CUDA twins.
"""

from lda.gibbs.config import GibbsConfig
from lda.gibbs.expectations import gibbs_expectations
from lda.gibbs.result import GibbsExpectations

__all__ = ["GibbsConfig", "GibbsExpectations", "gibbs_expectations"]
