"""The topic shaper's settings: when moves are tried, what makes a topic dead, junk or a
duplicate, and how a trial decides (lda.shaping; docs/model.md, "The shaper")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["retire", "merge", "birth", "split"]
KINDS: tuple[Kind, ...] = ("retire", "merge", "split", "birth")


@dataclass(frozen=True)
class ShapingConfig:
    """When moves are tried, what makes a topic dead or a duplicate, and how a trial decides."""

    every: int = 5  # minibatches between trials
    start_after: int = 20  # minibatches learned before the first trial; a newborn's grace too
    burn_in: int = 4  # revisit steps on the last minibatches a trial gives move and control
    min_topics: int = 2
    dead_share: float = 0.1  # dead: under this fraction of an average live topic's share
    junk_npmi: float | None = 0.0  # junk: NPMI of its top words in the recent documents below
    window: int = 10  # minibatches of recent documents the junk topics' NPMI is counted in
    share_decay: float = 0.9  # per minibatch, of the running mean of the topics' shares
    top: int = 10  # the top words two topics are compared by
    overlap: int = 5  # top words in common that make two topics say the same thing
    most: int = 8  # topics one trial retires or merges away, at most
    births: int = 64  # topics one birth or split trial adds, at most
    birth_docs: int = 4  # the least-held documents one born topic starts from
    min_length: int = 20  # documents shorter than this never seed a birth
    tolerance: float = 0.001  # relative perplexity a retire or merge may cost (noise)
    eval_sweeps: int = 10  # the trial's held-out sweeps (common random numbers)
    # the moves tried, in turn: births from the least-held documents made junk topics on DEV,
    # splits of broad topics did not (docs/defaults.md); "birth" may be added
    kinds: tuple[Kind, ...] = ("retire", "merge", "split")

    def __post_init__(self) -> None:
        if self.every < 1 or self.burn_in < 1 or self.start_after < 0:
            raise ValueError("every and burn_in must be at least 1, start_after at least 0")
        if not 1 <= self.overlap <= self.top:
            raise ValueError(f"overlap must be in [1, top = {self.top}]")
