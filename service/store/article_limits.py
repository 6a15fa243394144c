"""The longest title and id an article carries into the stream, and so into the snapshot and
the API's answers: every source caps them (``SkipCounter.capped``), and the API bounds its
article-id parameters by the same figure, so every queued article can be asked for by id."""

from __future__ import annotations

# A longer title is cut to this many characters, an ellipsis last: a title is display text, so
# its start still names the article, which is worth keeping (why 512: docs/service.md).
TITLE_CHARS = 512
# A longer id is skipped as id_too_long: cutting it could make two articles one id (the queue
# keeps the first of an id), and the API could not be asked for it.
ARTICLE_ID_CHARS = 200
