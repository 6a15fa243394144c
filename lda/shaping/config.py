"""The topic shaper's settings: when moves are decided and what makes a topic dead, junk, a
duplicate or broad enough to split (lda.shaping; docs/model.md, "The shaper")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["retire", "merge", "split"]
KINDS: tuple[Kind, ...] = ("retire", "merge", "split")


@dataclass(frozen=True)
class ShapingConfig:
    """When moves are decided, what is proposed, and how many one decision makes."""

    every: int = 20  # minibatches between decisions
    start_after: int = 20  # minibatches learned before the first decision; a newborn's grace too
    window: int = 10  # minibatches of recent documents a decision is scored on
    min_topics: int = 2
    dead_share: float = 0.1  # dead: under this fraction of an average live topic's share
    junk_npmi: float | None = 0.0  # junk: NPMI of its top words in the window below this
    share_decay: float = 0.9  # per minibatch, of the running mean of the topics' shares
    top: int = 10  # the top words two topics are compared by
    overlap: int = 5  # top words in common that make two topics say the same thing
    most: int = 8  # topics one decision retires or merges away, at most
    births: int = 64  # topics one decision splits, at most
    tolerance: float = 0.0002  # nats per token of the window a retire or merge may cost
    kinds: tuple[Kind, ...] = KINDS  # the moves proposed

    def __post_init__(self) -> None:
        if self.every < 1 or self.window < 1 or self.start_after < 0:
            raise ValueError("every and window must be at least 1, start_after at least 0")
        if not 1 <= self.overlap <= self.top:
            raise ValueError(f"overlap must be in [1, top = {self.top}]")
