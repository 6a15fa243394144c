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

from service.ingest.sources.base import ArticleSkipped

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

# Every pattern runs in time linear in its input, whatever the input: a hostile page must not
# stall the scraper. A match attempt starts only at a delimiter and scans a run that ends at the
# next one (or is possessive), so attempts never rescan each other's text; what a pattern would
# do with backtracking over long runs (headings, unclosed refs) is done by code instead.
_TEMPLATE_START = re.compile(r"\{\{([^{}|\n]*+)(?=\||\}\})")
_REDIRECT = re.compile(r"^\s*#\s*redirect\b", re.IGNORECASE)
_COMMENTS = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_REF_OPEN = re.compile(r"<ref(?:\s[^<>]*+)?>", re.IGNORECASE)
_REF_CLOSE = re.compile(r"</ref\s*+>", re.IGNORECASE)
_QUOTES = re.compile(r"'{2,}")
_MAGIC_WORD = re.compile(r"__[A-Z]++__")
_TABLE_LINE = re.compile(r"^\s*+(\{\||\|\}|\|-|\||!)")
_RESIDUE_LINK = re.compile(r"\[\[(?:[^\[\]|]*+\|)?([^\[\]|]*+)\]\]")
_RESIDUE_TEMPLATE = re.compile(r"\{\{[^{}]*+\}\}")
_RESIDUE_MARKUP = re.compile(r"\[\[|\]\]|\{\{|\}\}|={2,}")
_BLANKS = re.compile(r"[ \t\u00a0]+")
_MANY_NEWLINES = re.compile(r"\n{3,}")
_SPACE_BEFORE_PUNCT = re.compile(r"(?<! ) +([,.;:!?)])")
_EMPTY_PARENS = re.compile(r"\(\s*+[,;]?\s*+\)")
_LEFTOVER_TAG = re.compile(r"</?[A-Za-z][^<>\n]*+>")
_LANGUAGE_PREFIX = re.compile(r"^[a-z]{2,3}(-[a-z]{2,8})*$")
# Passes that unwrap nested leftover links and templates (each pass is linear; deeper nesting
# than this is markup the parser gave up on, and its brackets are blanked instead).
RESIDUE_PASSES = 8
# Deepest nesting of templates and links a page may have: the parser's own limit, past which it
# tries and abandons every level (slowly) and leaves the markup as text.
MAX_NESTING = 100
_BRACKETS = re.compile(r"\{\{|\}\}|\[\[|\]\]")


class UnparsableWikitext(ValueError):
    """Wikitext the cleaner will not parse (the page is skipped, not the source)."""


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
        name = match.group(1).lstrip()
        if name.startswith(("Template:", "template:")):
            name = name[len("template:") :]
        name = name.strip()
        if 0 < len(name) <= 60 and _normal_name(name) in DISAMBIGUATION_TEMPLATES:
            return True
    return False


def _normal_name(name: str) -> str:
    return " ".join(name.replace("_", " ").split()).lower()


def skip_reason(title: str, wikitext: str) -> str | None:
    """Why a main-namespace page is not an article to learn from, or None when it is one."""
    if not wikitext.strip():
        return "empty"
    if is_redirect(wikitext):
        return "redirect"
    if is_disambiguation(title, wikitext):
        return "disambiguation"
    return None


def clean_or_skip(text: str) -> str:
    """:func:`clean_wikitext`, any failure of which is the page's: ArticleSkipped."""
    try:
        return clean_wikitext(text)
    except Exception as exc:  # the parser's RecursionError, MemoryError, ...: this page only
        raise ArticleSkipped("unparsable", f"{type(exc).__name__}: {exc}"[:200]) from exc


def clean_wikitext(text: str) -> str:
    """Plain text of a wikitext article, ready for the tokeniser."""
    pieces: list[str] = []
    dropping_level = 0  # > 0 while inside a dropped section of this heading level
    # Bold/italic quotes carry no words and, unbalanced, derail the parser; comments and refs
    # are dropped anyway: removing them first makes parsing several times cheaper.
    text = _QUOTES.sub("", _drop_refs(_COMMENTS.sub("", text)))
    _check_nesting(text)
    text = _drop_tables_and_sections(text)
    for node in mwparserfromhell.parse(text).nodes:
        if isinstance(node, Heading):
            if dropping_level and node.level > dropping_level:
                continue  # a subsection of a dropped section
            dropping_level = node.level if _plain_heading(node) in DROPPED_SECTIONS else 0
        if not dropping_level:
            _render_node(node, pieces)
    return _tidy("".join(pieces))


def _check_nesting(text: str) -> None:
    """Raise UnparsableWikitext when templates and links nest deeper than MAX_NESTING."""
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in ("{{", "[["):
            depth += 1
            if depth > MAX_NESTING:
                raise UnparsableWikitext(f"templates and links nest over {MAX_NESTING} deep")
        elif depth:
            depth -= 1


def _drop_refs(text: str) -> str:
    """``text`` without its ``<ref .../>`` and ``<ref ...>...</ref>`` spans, in one pass: each
    opening tag is closed by the first ``</ref>`` after it, and an opening tag that nothing
    closes is dropped alone, its text kept (as the parser would show it, minus the tag it would
    chase to the end of the page from every such tag)."""
    closes = _REF_CLOSE.finditer(text)
    close = next(closes, None)
    pieces: list[str] = []
    kept = 0  # text before this is decided
    for opening in _REF_OPEN.finditer(text):
        if opening.start() < kept:
            continue  # inside a span already dropped
        if opening.group().endswith("/>"):
            end = opening.end()
        else:
            while close is not None and close.start() < opening.end():
                close = next(closes, None)
            end = opening.end() if close is None else close.end()
        pieces.append(text[kept : opening.start()])
        kept = end
    pieces.append(text[kept:])
    return "".join(pieces)


def _heading(line: str) -> tuple[int, str] | None:
    """(level, title) of a heading line such as ``== Title ==``, else None. The level is the
    shorter run of ``=`` (at most 6); what the longer run has beyond it belongs to the title."""
    right = line.rstrip()
    if not right.startswith("="):
        return None
    lead = len(right) - len(right.lstrip("="))
    if lead == len(right):  # only "=": the middle ones are the title
        level = min(6, (lead - 1) // 2)
        return (level, right[level:-level]) if level else None
    level = min(6, lead, len(right) - len(right.rstrip("=")))
    return (level, right[level:-level].strip()) if level else None


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
        heading = _heading(line)
        if heading is not None:
            level, title = heading
            if dropping_level and level > dropping_level:
                continue
            title = " ".join(mwparserfromhell.parse(title).strip_code().split())
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
        out.append(_without_parenthesis(rest if sep and visible_colon else target))
        return
    out.append(target.split("#", 1)[0] if not target.startswith("#") else target[1:])


def _without_parenthesis(title: str) -> str:
    """The title without a trailing parenthesis and the blanks before it (the pipe trick shows
    "Paris" for "Paris (France)"), from the first "(" when the title ends with ")"."""
    if "\n" in title:
        return title  # never in a link's title
    end = title.rstrip()
    start = end.find("(")
    if not end.endswith(")") or start < 0:
        return title
    return end[:start].rstrip()


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
    for _ in range(RESIDUE_PASSES):
        previous = text
        text = _RESIDUE_TEMPLATE.sub("", _RESIDUE_LINK.sub(r"\1", text))
        if text == previous:
            break
    lines = [_residue_heading(line.strip()) for line in text.split("\n")]
    return _RESIDUE_MARKUP.sub(" ", "\n".join(lines))


def _residue_heading(line: str) -> str:
    """A stripped line's text without the runs of ``=`` around it (a heading left as text)."""
    if len(line) < 2 or not (line.startswith("=") and line.endswith("=")):
        return line
    return line.lstrip("=").lstrip().rstrip("=").rstrip()
