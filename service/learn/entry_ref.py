"""A stream entry's article without its text: what the worker carries for each document from
its placement to the step that learns it, and what the parts keep of it."""

from __future__ import annotations

from dataclasses import dataclass

ArticleRef = tuple[str, str, str]  # (title, article id, source)


@dataclass(frozen=True)
class EntryRef:
    """A stream entry's article without its text: what the worker's session carries for each
    document, from its placement to the step that learns it."""

    entry: str  # the stream entry, acknowledged after the checkpoint that holds its effect
    title: str
    id: str  # the page id
    source: str

    @property
    def article(self) -> ArticleRef:
        return self.title, self.id, self.source
