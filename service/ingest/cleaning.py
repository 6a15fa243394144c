"""Wikitext to plain prose, shared by every source that carries wikitext.

``clean_wikitext`` keeps what a reader sees as running text (prose, the visible text of links,
headings of kept sections, list items) and drops everything else: templates and infoboxes,
``<ref>``s, tables, files and images, categories, comments and HTML tags, math, and the
trailing apparatus sections (References, External links, See also, ...). ``skip_reason`` says
why a page is not an article worth learning from (redirect, disambiguation page).
"""

from __future__ import annotations

import html
import re

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Node,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.wikicode import Wikicode

# Sections cut with everything under them: citations and navigation, not prose.
DROPPED_SECTIONS = frozenset(
    {
        "references",
        "external links",
        "see also",
        "notes",
        "further reading",
        "bibliography",
        "sources",
        "citations",
        "footnotes",
        "works cited",
        "notes and references",
        "references and notes",
        "general references",
        "explanatory notes",
        "external link",
        "reference",
        "related articles",
    }
)

# Tags whose contents are not prose (citations, formulas, media, code, tables).
DROPPED_TAGS = frozenset(
    {
        "ref",
        "references",
        "math",
        "chem",
        "ce",
        "score",
        "gallery",
        "timeline",
        "imagemap",
        "graph",
        "templatedata",
        "mapframe",
        "maplink",
        "syntaxhighlight",
        "source",
        "pre",
        "code",
        "hiero",
        "inputbox",
        "categorytree",
        "includeonly",
        "table",
        "tr",
        "td",
        "th",
        "caption",
        "noinclude",
        "style",
        "script",
    }
)

# Link namespaces that are media or page metadata, never visible text.
HIDDEN_LINK_NAMESPACES = frozenset({"file", "image", "media", "category"})

# Inline templates whose first positional argument is shown as text (e.g. {{nowrap|...}}).
TEXT_TEMPLATES_FIRST = frozenset(
    {"nowrap", "nobr", "small", "big", "em", "strong", "nihongo", "quote", "blockquote", "cquote"}
)
# Templates that render "value unit" (e.g. {{convert|5|km}} -> "5 km").
CONVERT_TEMPLATES = frozenset({"convert", "cvt"})

# Templates that mark a page as a disambiguation page (Template:Disambiguation and relatives).
DISAMBIGUATION_TEMPLATES = frozenset(
    {
        "disambiguation",
        "disambig",
        "disamb",
        "dab",
        "dis",
        "geodis",
        "hndis",
        "hndisambig",
        "numberdis",
        "schooldis",
        "roaddis",
        "mathdab",
        "shipindex",
        "mil-unit-dis",
        "letter-number combination disambiguation",
        "airport disambiguation",
        "call sign disambiguation",
        "chinese title disambiguation",
        "genus disambiguation",
        "species latin name disambiguation",
        "taxonomy disambiguation",
        "disambiguation cleanup",
    }
)

_TEMPLATE_START = re.compile(r"\{\{\s*(?:[Tt]emplate:)?([^{}|\n]{1,60}?)\s*(?=\||\}\})")
_REDIRECT = re.compile(r"^\s*#\s*redirect\b", re.IGNORECASE)
_COMMENTS = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_REFS = re.compile(r"<ref(?:\s[^<>]*)?/>|<ref(?:\s[^<>]*)?>.*?</ref\s*>", re.DOTALL | re.IGNORECASE)
_HEADING_LINE = re.compile(r"^(={1,6})\s*(.+?)\s*\1\s*$")
_QUOTES = re.compile(r"'{2,}")
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_TABLE_LINE = re.compile(r"^\s*(\{\||\|\}|\|-|\||!)")
_RESIDUE_LINK = re.compile(r"\[\[(?:[^\[\]|]*\|)?([^\[\]|]*)\]\]")
_RESIDUE_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_RESIDUE_HEADING = re.compile(r"^=+\s*(.*?)\s*=+$")
_RESIDUE_MARKUP = re.compile(r"\[\[|\]\]|\{\{|\}\}|={2,}")
_BLANKS = re.compile(r"[ \t\u00a0]+")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_SPACE_BEFORE_PUNCT = re.compile(r" +([,.;:!?)])")
_EMPTY_PARENS = re.compile(r"\(\s*[,;]?\s*\)")
_LEFTOVER_TAG = re.compile(r"</?[A-Za-z][^<>\n]*/?>")
_LANGUAGE_PREFIX = re.compile(r"^[a-z]{2,3}(-[a-z]{2,8})*$")


def is_redirect(wikitext: str) -> bool:
    """True when the wikitext is a redirect (``#REDIRECT [[Target]]``)."""
    return bool(_REDIRECT.match(wikitext))


def _template_name(template: Template) -> str:
    name = str(template.name).strip().replace("_", " ")
    return " ".join(name.split()).lower()


def is_disambiguation(title: str, wikitext: str) -> bool:
    """True for a disambiguation page: its title says so or it carries a disambiguation template."""
    if title.strip().lower().endswith("(disambiguation)"):
        return True
    for match in _TEMPLATE_START.finditer(wikitext):
        name = " ".join(match.group(1).replace("_", " ").split()).lower()
        if name in DISAMBIGUATION_TEMPLATES:
            return True
    return False


def skip_reason(title: str, wikitext: str) -> str | None:
    """Why a main-namespace page is not an article to learn from, or None when it is one."""
    if not wikitext.strip():
        return "empty"
    if is_redirect(wikitext):
        return "redirect"
    if is_disambiguation(title, wikitext):
        return "disambiguation"
    return None


def clean_wikitext(text: str) -> str:
    """Plain text of a wikitext article, ready for the tokeniser."""
    pieces: list[str] = []
    dropping_level = 0  # > 0 while inside a dropped section of this heading level
    # Bold/italic quotes carry no words and, unbalanced, derail the parser; comments and refs
    # are dropped anyway: removing them first makes parsing several times cheaper.
    text = _QUOTES.sub("", _REFS.sub("", _COMMENTS.sub("", text)))
    text = _drop_tables_and_sections(text)
    for node in mwparserfromhell.parse(text).nodes:
        if isinstance(node, Heading):
            if dropping_level and node.level > dropping_level:
                continue  # a subsection of a dropped section
            dropping_level = node.level if _plain_heading(node) in DROPPED_SECTIONS else 0
        if not dropping_level:
            _render_node(node, pieces)
    return _tidy("".join(pieces))


def _drop_tables_and_sections(text: str, tables: bool = True) -> str:
    """Line pass before parsing: drop ``{| ... |}`` tables (nested too) and dropped sections.

    Both are removed anyway; doing it on lines spares the parser most of its work. A table
    never closed is left to the parser rather than swallowing the rest of the article."""
    kept: list[str] = []
    table_depth = 0
    dropping_level = 0
    for line in text.split("\n"):
        stripped = line.lstrip()
        if tables and stripped.startswith("{|"):
            table_depth += 1
            continue
        if table_depth:
            if stripped.startswith("|}"):
                table_depth -= 1
            continue
        heading = _HEADING_LINE.match(line)
        if heading is not None:
            level = len(heading.group(1))
            if dropping_level and level > dropping_level:
                continue
            title = " ".join(mwparserfromhell.parse(heading.group(2)).strip_code().split())
            dropping_level = level if title.lower() in DROPPED_SECTIONS else 0
        if not dropping_level:
            kept.append(line)
    if table_depth:
        return _drop_tables_and_sections(text, tables=False)
    return "\n".join(kept)


def _plain_heading(heading: Heading) -> str:
    title = str(heading.title.strip_code()).strip().lower()
    return " ".join(title.split())


def _render(code: Wikicode, out: list[str]) -> None:
    for node in code.nodes:
        _render_node(node, out)


def _render_node(node: Node, out: list[str]) -> None:
    if isinstance(node, Text):
        out.append(_MAGIC_WORD.sub("", str(node.value)))
    elif isinstance(node, Wikilink):
        _render_link(node, out)
    elif isinstance(node, ExternalLink):
        if node.title is not None:
            _render(node.title, out)
    elif isinstance(node, Tag):
        _render_tag(node, out)
    elif isinstance(node, Heading):
        out.append("\n")
        _render(node.title, out)
        out.append("\n")
    elif isinstance(node, HTMLEntity):
        out.append(node.normalize())
    elif isinstance(node, Template):
        _render_template(node, out)
    elif isinstance(node, (Comment, Argument)):
        return
    # Anything else (parser functions are templates; unknown nodes) carries no prose.


def _render_link(link: Wikilink, out: list[str]) -> None:
    title = str(link.title).strip()
    visible_colon = title.startswith(":")
    target = title.lstrip(":").strip()
    prefix, sep, rest = target.partition(":")
    namespace = prefix.strip().lower()
    if sep and not visible_colon:
        if namespace in HIDDEN_LINK_NAMESPACES:
            return
        if link.text is None and _LANGUAGE_PREFIX.match(namespace):
            return  # interlanguage link, shown in the sidebar, not in the text
    if link.text is not None:
        shown = str(link.text).strip()
        if shown:
            _render(link.text, out)
            return
        # Pipe trick: [[Paris (France)|]] shows "Paris".
        out.append(re.sub(r"\s*\(.*\)\s*$", "", rest if sep and visible_colon else target))
        return
    out.append(target.split("#", 1)[0] if not target.startswith("#") else target[1:])


def _render_tag(tag: Tag, out: list[str]) -> None:
    name = str(tag.tag).strip().lower()
    if name in DROPPED_TAGS:
        return
    if name == "br" or name in {"li", "dt", "dd", "p", "div", "blockquote", "hr"}:
        out.append("\n")
    if tag.contents is not None and not tag.self_closing:
        _render(tag.contents, out)
    if name in {"p", "div", "blockquote", "dt"}:
        out.append("\n")


def _render_template(template: Template, out: list[str]) -> None:
    name = _template_name(template)
    positional = [param for param in template.params if not param.showkey]
    if name in TEXT_TEMPLATES_FIRST and positional:
        _render(positional[0].value, out)
    elif name in CONVERT_TEMPLATES and len(positional) >= 2:
        out.append(f"{str(positional[0].value).strip()} {str(positional[1].value).strip()}")
    elif name == "lang" and len(positional) >= 2:
        _render(positional[1].value, out)
    # Every other template (infoboxes, citations, navigation boxes, ...) is dropped.


def _tidy(text: str) -> str:
    """Normalise spacing and remove markup the parser left as text (unbalanced input)."""
    text = _LEFTOVER_TAG.sub("", html.unescape(text))
    if "{{" in text or "[[" in text or "==" in text:
        text = _remove_residue(text)
    lines = []
    for line in text.split("\n"):
        if _TABLE_LINE.match(line):
            continue  # residue of a table the parser could not close
        line = line.replace("|", " ")
        line = _BLANKS.sub(" ", line).strip()
        line = _SPACE_BEFORE_PUNCT.sub(r"\1", _EMPTY_PARENS.sub("", line))
        lines.append(_BLANKS.sub(" ", line).strip())
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


def _remove_residue(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = _RESIDUE_TEMPLATE.sub("", _RESIDUE_LINK.sub(r"\1", text))
    lines = [_RESIDUE_HEADING.sub(r"\1", line.strip()) for line in text.split("\n")]
    return _RESIDUE_MARKUP.sub(" ", "\n".join(lines))
