"""The seeds file (the setting ``seeds``) that ``train``, ``worker`` and ``up`` read at start."""

from __future__ import annotations

import json
from pathlib import Path

from service.errors import CommandError


def given_seeds(path: Path | None, n_topics: int) -> dict[int, list[str]]:
    """The seeds file's words by topic (none without one): a JSON object from topic number (0
    to ``n_topics`` - 1) to a non-empty list of words. A file that cannot be used is a
    CommandError saying why (read without the learner's imports: ``up`` checks it too)."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read seeds file {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise CommandError(f"seeds file {path} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise CommandError(f"seeds file {path}: expected an object from topic number to words")
    seeds: dict[int, list[str]] = {}
    for key, words in data.items():
        try:
            k = int(key)
        except ValueError:
            raise CommandError(f"seeds file {path}: {key!r} is not a topic number") from None
        if not 0 <= k < n_topics:
            raise CommandError(f"seeds file {path}: no topic {k}: topics are 0 to {n_topics - 1}")
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise CommandError(f"seeds file {path}: topic {k}'s seeds must be a list of words")
        if not words:
            raise CommandError(f"seeds file {path}: topic {k} has no word")
        seeds[k] = words
    return seeds
