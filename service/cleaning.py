"""Wikitext to plain prose, shared by every source that carries wikitext."""

from __future__ import annotations

import mwparserfromhell


def clean_wikitext(wikitext: str) -> str:
    """Plain text of a wikitext article, ready for the tokeniser."""
    return str(mwparserfromhell.parse(wikitext).strip_code()).strip()
