"""Wikitext cleaning: prose and link text kept, markup and apparatus dropped."""

from __future__ import annotations

import re

import mwparserfromhell
import pytest
from mwparserfromhell.nodes import Tag, Template

from service.ingest.cleaning import clean_wikitext, is_disambiguation, is_redirect, skip_reason
from tests.support.corpora import dump_pages

MARKUP_REMNANTS = ("{{", "}}", "[[", "]]", "<ref", "|", "&lt;", "==")


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        ("A [[Paris|capital city]] and [[Lyon]].", "A capital city and Lyon."),
        ("See [[Paris (France)|]] now.", "See Paris now."),
        ("Before{{Infobox country|name=X|capital=[[Y]]}} after.", "Before after."),
        (
            "Fact.<ref name=a>{{cite web|url=http://x|title=T}}</ref> Next.<ref name=a/>",
            "Fact. Next.",
        ),
        ("Text [[File:Map.png|thumb|A [[caption]] here]] more.", "Text more."),
        ("Body.\n[[Category:Countries]]\n[[de:Land]]", "Body."),
        ("x <!-- hidden note --> y", "x y"),
        ("Area is <math>\\pi r^2</math> here.", "Area is here."),
        ("'''Bold''' and ''italic'' <span style='x'>span</span>.", "Bold and italic span."),
        ("A &amp; B &lt; C&nbsp;D", "A & B < C D"),
        ("Escaped &lt;ref name=x&gt; tag and <span>real</span> one", "Escaped tag and real one"),
        ("Link [http://example.org the site] and [http://bare.org].", "Link the site and."),
        ("{| class=wikitable\n|-\n| a || b\n|}\nProse.", "Prose."),
        ("Height {{convert|5|km}} and {{nowrap|kept words}}.", "Height 5 km and kept words."),
        ("__NOTOC__\nLead text.", "Lead text."),
    ],
)
def test_markup_is_dropped_and_visible_text_kept(wikitext: str, expected: str) -> None:
    assert clean_wikitext(wikitext) == expected


def test_trailing_apparatus_sections_are_cut_but_later_prose_kept() -> None:
    wikitext = (
        "Lead.\n== History ==\nOld [[Rome]].\n=== Empire ===\nMore.\n"
        "== See also ==\n* [[X]]\n=== Lists ===\nhidden\n== References ==\n{{reflist}}\n"
        "== External links ==\n* [http://a.b site]\n== Notes ==\nnote\n== Further reading ==\n"
        "book\n== Bibliography ==\nworks\n== Legacy ==\nKept."
    )
    text = clean_wikitext(wikitext)
    assert text.split() == [
        "Lead.",
        "History",
        "Old",
        "Rome.",
        "Empire",
        "More.",
        "Legacy",
        "Kept.",
    ]


def test_unbalanced_quotes_do_not_leak_markup() -> None:
    # Unbalanced bold/italic made the parser give up on the link and template (real articles).
    wikitext = "[[File:x.svg|thumb|A caption:<br /> '''bold''<br />tail.]]\n\nProse {{cite|a}} end."
    assert clean_wikitext(wikitext) == "Prose end."


def test_redirects_and_disambiguation_pages_are_recognised() -> None:
    assert is_redirect("#REDIRECT [[Target]]") and is_redirect("  #redirect[[T]]")
    assert not is_redirect("A page about #REDIRECT.")
    assert is_disambiguation("Mercury (disambiguation)", "anything")
    assert is_disambiguation("Aa River", "Rivers.\n{{geodis}}")
    assert is_disambiguation("Ada", "Ada may refer to:\n{{Disambiguation|geo|hndis}}")
    assert not is_disambiguation("Atom", "An atom.\n{{Reflist}}\n{{Authority control}}")
    assert skip_reason("Atom", "") == "empty"
    assert skip_reason("Atom", "#REDIRECT [[Atoms]]") == "redirect"
    assert skip_reason("Atom", "The atom is small.") is None


def _lead_paragraph_words(wikitext: str) -> set[str]:
    """Prose words of the lead's first bold-title paragraph, by an independent route: the lead
    without its top-level templates, tables and refs, through ``strip_code``."""
    lead = mwparserfromhell.parse(re.split(r"\n==", wikitext, maxsplit=1)[0])
    for node in lead.filter(recursive=False, forcetype=(Template, Tag)):
        if isinstance(node, Template) or str(node.tag).lower() in {"ref", "table"}:
            lead.remove(node)
    for line in str(lead).split("\n"):
        if line.startswith("'''"):
            return set(re.findall(r"[a-z]{3,}", mwparserfromhell.parse(line).strip_code().lower()))
    return set()


def test_real_wikitext_articles_are_clean_and_keep_their_prose() -> None:
    pages = [
        p
        for p in dump_pages()
        if p.ns == 0 and skip_reason(p.title, p.wikitext) is None and not p.redirect
    ]
    assert len(pages) == 98
    recalls = []
    for page in pages:
        text = clean_wikitext(page.wikitext)
        for remnant in MARKUP_REMNANTS:
            assert remnant not in text, f"{page.title}: {remnant!r} left in the text"
        assert len(text) >= 200, page.title
        expected = _lead_paragraph_words(page.wikitext)
        if expected:
            words = set(re.findall(r"[a-z]{3,}", text.lower()))
            recalls.append(len(expected & words) / len(expected))
    assert len(recalls) >= 60
    assert sum(recalls) / len(recalls) >= 0.97
    assert min(recalls) >= 0.8
