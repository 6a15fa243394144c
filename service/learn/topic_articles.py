"""The articles behind each topic: for every topic the N learned articles most surely about it,
aged, in O(K x N) memory (docs/topics.md, "The articles behind a topic").

An article's share of topic k is E[n_dk] / n_d from the Gibbs expectations its minibatch was
learned with; how sure that share is, given the article's length n_d, is the lower end of its
interval (:func:`lda.search.share_bound`), so a stub's large share ranks below a long article's
solid one. Its score halves every ``half_life`` documents the stream brings after it, so a
topic's list follows what the topic means now; a topic whose words changed a lot at an
evaluation also forgets the articles learned before the evaluation ahead of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lda.search import share_bound
from service.store.topic_article import TopicArticle

# Articles with fewer tokens in the vocabulary are not listed: a handful of tokens gives a
# share of 1 to whatever topic drew them, which says little about the topic.
MIN_TOKENS = 20


class TopicArticles:
    """Per topic, the ``keep`` articles most about it; fed each fresh minibatch's shares."""

    def __init__(self, n_topics: int, keep: int, half_life: int) -> None:
        self.keep, self.half_life = keep, half_life
        self.share = torch.zeros(n_topics, keep, dtype=torch.float64)
        self.tokens = torch.zeros(n_topics, keep, dtype=torch.float64)  # each article's n_d
        self.docs_at = torch.zeros(n_topics, keep, dtype=torch.int64)
        self.slot = torch.full((n_topics, keep), -1, dtype=torch.int64)  # -1: empty
        self.articles: dict[int, tuple[str, str, str]] = {}  # slot id -> (title, id, source)
        self.next_slot = 0

    def bound(self) -> torch.Tensor:
        """(K, keep) how sure each kept article's share is, given its length."""
        return share_bound(self.share, self.tokens, self.share.shape[0])

    def score(self, docs_seen: int) -> torch.Tensor:
        """(K, keep) each kept article's bound aged to ``docs_seen`` (-inf where empty)."""
        age = (docs_seen - self.docs_at).clamp_min(0).to(torch.float64)
        aged = self.bound() * torch.exp2(-age / self.half_life)
        return torch.where(self.slot >= 0, aged, torch.full_like(aged, -torch.inf))

    def offer(
        self,
        counts: torch.Tensor,
        articles: Sequence[tuple[str, str, str]],
        docs_seen: int,
    ) -> None:
        """A minibatch's documents: ``counts`` (n, K) E[n_dk], ``articles`` each one's
        (title, id, source), learned when the stream had brought ``docs_seen`` documents."""
        if self.keep == 0 or not len(articles):
            return
        counts = counts.to("cpu", torch.float64)
        lengths = counts.sum(dim=1, keepdim=True)
        share = counts / lengths.clamp_min(1.0)
        bound = share_bound(share, lengths, share.shape[1])
        bound[lengths.squeeze(1) < MIN_TOKENS] = -torch.inf
        top = min(self.keep, share.shape[0])
        best, rows = torch.topk(bound.T, top, dim=1)  # (K, top)
        base = self.next_slot
        self.next_slot += len(articles)
        fresh_slot = torch.where(torch.isfinite(best), rows + base, torch.full_like(rows, -1))
        scores = torch.cat([self.score(docs_seen), best], dim=1)
        shares = torch.cat([self.share, share.T.gather(1, rows)], dim=1)
        tokens = torch.cat([self.tokens, lengths.squeeze(1)[rows]], dim=1)
        at = torch.cat([self.docs_at, torch.full_like(rows, docs_seen)], dim=1)
        slots = torch.cat([self.slot, fresh_slot], dim=1)
        order = torch.topk(scores, self.keep, dim=1).indices
        self.share, self.docs_at = shares.gather(1, order), at.gather(1, order)
        self.tokens = tokens.gather(1, order)
        self.slot = slots.gather(1, order)
        self.slot[~torch.isfinite(scores.gather(1, order))] = -1
        kept = set(self.slot[self.slot >= 0].tolist())
        for i in kept - self.articles.keys():
            if base <= i < self.next_slot:
                self.articles[i] = articles[i - base]
        for i in self.articles.keys() - kept:
            del self.articles[i]

    def changed(self, topics: Sequence[bool], since: int) -> None:
        """Topics whose words changed a lot: forget their articles learned before ``since``
        (the evaluation before the one that saw the change) or at it."""
        mask = torch.tensor(list(topics), dtype=torch.bool).unsqueeze(1) & (self.docs_at <= since)
        self.slot[mask] = -1
        self.share[mask] = 0.0
        self.tokens[mask] = 0.0

    def permute(self, matched: Sequence[int]) -> None:
        """Topic k is now what topic ``matched[k]`` was (the drift matching moved labels)."""
        order = torch.tensor(list(matched), dtype=torch.int64)
        self.share, self.docs_at, self.slot = (
            self.share[order],
            self.docs_at[order],
            self.slot[order],
        )
        self.tokens = self.tokens[order]

    def reshape(self, dest: Sequence[int]) -> None:
        """Topics merged or dropped (``dest``: per topic, where its articles go; -1: dropped,
        see :mod:`service.learn.topic_reshape`): a kept topic takes the surest of its own and
        the merged-away topics' articles (one listed by both: their shares added, its share of
        the topic they make), a dropped or merged-away topic lists none."""
        if self.keep == 0:
            return
        into = [int(d) for d in dest]
        docs = int(self.docs_at.max()) if self.docs_at.numel() else 0  # no age clamped
        for away, kept in enumerate(into):
            if kept not in (away, -1):
                self._merge(kept, away, docs)
        for topic, kept in enumerate(into):
            if kept != topic:
                self.slot[topic], self.share[topic], self.tokens[topic] = -1, 0.0, 0.0
                self.docs_at[topic] = 0
        listed = set(self.slot[self.slot >= 0].tolist())
        self.articles = {i: a for i, a in self.articles.items() if i in listed}

    def _merge(self, kept: int, away: int, docs_seen: int) -> None:
        """Topic ``kept``'s list becomes the ``keep`` surest (aged) of its and ``away``'s."""
        slots = torch.cat([self.slot[kept], self.slot[away]])
        share = torch.cat([self.share[kept], self.share[away]])
        tokens = torch.cat([self.tokens[kept], self.tokens[away]])
        at = torch.cat([self.docs_at[kept], self.docs_at[away]])
        n = self.keep
        for i in range(n):  # an article in both lists: one entry, its shares added
            s = int(slots[i])
            twin = (slots[n:] == s).nonzero().flatten() if s >= 0 else ()
            for j in twin:
                share[i] += share[n + int(j)]
                slots[n + int(j)] = -1
        share = share.clamp(max=1.0)
        age = (docs_seen - at).clamp_min(0).to(torch.float64)
        bound = share_bound(share[None], tokens[None], self.share.shape[0])[0]
        score = torch.where(slots >= 0, bound * torch.exp2(-age / self.half_life), -torch.inf)
        order = torch.topk(score, n).indices
        self.slot[kept] = torch.where(torch.isfinite(score[order]), slots[order], -1)
        self.share[kept], self.tokens[kept] = share[order], tokens[order]
        self.docs_at[kept] = at[order]

    def rows(self, docs_seen: int) -> list[list[list[Any]]]:
        """Each topic's articles, surest (aged) first, as the snapshot carries them."""
        return [[a.row() for a in listed] for listed in self.listed(docs_seen)]

    def listed(self, docs_seen: int) -> list[list[TopicArticle]]:
        """Each topic's articles, surest (aged) first."""
        order = torch.sort(self.score(docs_seen), dim=1, descending=True).indices
        out: list[list[TopicArticle]] = []
        for slots, shares, ats, bounds, lengths in zip(
            self.slot.gather(1, order).tolist(),
            self.share.gather(1, order).tolist(),
            self.docs_at.gather(1, order).tolist(),
            self.bound().gather(1, order).tolist(),
            self.tokens.gather(1, order).tolist(),
            strict=True,
        ):
            out.append(
                [
                    TopicArticle(*self.articles[s], round(share, 4), at, round(bound, 4), round(n))
                    for s, share, at, bound, n in zip(
                        slots, shares, ats, bounds, lengths, strict=True
                    )
                    if s >= 0
                ]
            )
        return out

    def state_dict(self) -> dict[str, Any]:
        return {
            "share": self.share.clone(),
            "tokens": self.tokens.clone(),
            "docs_at": self.docs_at.clone(),
            "slot": self.slot.clone(),
            "articles": dict(self.articles),
            "next_slot": self.next_slot,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A checkpoint's articles; one of another shape (K or keep changed), or from before
        lengths were kept (nothing to rank them by how sure), is ignored: the lists start
        afresh."""
        if tuple(state["slot"].shape) != tuple(self.slot.shape) or "tokens" not in state:
            return
        self.share, self.docs_at = state["share"].clone(), state["docs_at"].clone()
        self.tokens = state["tokens"].clone()
        self.slot = state["slot"].clone()
        self.articles = dict(state["articles"])
        self.next_slot = int(state["next_slot"])
