"""Topics that shape themselves: the moves (``moves``, ``divide``), what is proposed
(``proposals``), the closed-form scores that decide (``evidence``) and the shaper that ties them
to a learner (``shaper``) (docs/model.md, "Topic moves", "The shaper")."""

from lda.shaping.config import KINDS, Kind, ShapingConfig
from lda.shaping.shaper import FixedTopics, Reshaped, Shaper, TopicShaper

__all__ = ["KINDS", "FixedTopics", "Kind", "Reshaped", "Shaper", "ShapingConfig", "TopicShaper"]
