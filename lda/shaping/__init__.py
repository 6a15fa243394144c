"""Topics that shape themselves: the moves (``moves``, ``divide``), what is proposed
(``proposals``), the closed-form scores that decide (``evidence``) and the shaper that ties them
to a learner (``shaper``) (docs/model.md, "Topic moves", "The shaper").

The public names load on first use, so ``import lda.shaping.config`` (the settings read its
defaults) stays free of torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_PUBLIC = {
    "KINDS": "lda.shaping.config",
    "Kind": "lda.shaping.config",
    "ShapingConfig": "lda.shaping.config",
    "FixedTopics": "lda.shaping.shaper",
    "Reshaped": "lda.shaping.shaper",
    "Shaper": "lda.shaping.shaper",
    "TopicShaper": "lda.shaping.shaper",
}
__all__ = ["KINDS", "FixedTopics", "Kind", "Reshaped", "Shaper", "ShapingConfig", "TopicShaper"]

if TYPE_CHECKING:
    from lda.shaping.config import KINDS, Kind, ShapingConfig
    from lda.shaping.shaper import FixedTopics, Reshaped, Shaper, TopicShaper


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'lda.shaping' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value
