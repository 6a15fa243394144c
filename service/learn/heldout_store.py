"""The worker's held-out set, kept in Redis so that it survives worker restarts.

A Redis list (setting ``heldout_key``) of JSON objects ``{"entry", "id", "text"}``: the stream
entry, the page id and the article's text. Texts (not word ids) are stored so the set can be
encoded with whichever vocabulary the model uses. An entry is stored before it is
acknowledged, so a crash in between can store it twice: readers drop repeated entries.
"""

from __future__ import annotations

import json

import redis


class HeldoutStore:
    """Append and read the held-out articles."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = key

    def add(self, entry_id: str, page_id: str, text: str) -> None:
        """Store one held-out article (before its stream entry is acknowledged)."""
        record = {"entry": entry_id, "id": page_id, "text": text}
        self.client.rpush(self.key, json.dumps(record, separators=(",", ":")))

    def texts(self) -> list[str]:
        """Texts of the stored articles in arrival order, each entry once."""
        raw: list[bytes | str] = self.client.lrange(self.key, 0, -1)
        seen: set[str] = set()
        texts = []
        for item in raw:
            record = json.loads(item)
            if record["entry"] in seen:
                continue
            seen.add(record["entry"])
            texts.append(str(record["text"]))
        return texts
