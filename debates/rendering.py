"""Markdown from models and users, made safe for a page.

Model output is untrusted: Markdown is rendered with raw HTML escaped, then the result is cleaned
by nh3 (an allowlist sanitiser) so no script, event handler, `javascript:`/`data:` link or
comment survives. Unicode direction overrides and zero-width characters are removed first, so text
cannot visually disguise itself.
"""

from __future__ import annotations

import html
import re
import threading
from collections import OrderedDict

import markdown
import nh3
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from agora.text import strip_invisible

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "b",
    "i",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "a",
    "del",
    "sup",
    "sub",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}


class _EscapeHtml(markdown.Extension):
    """Raw HTML in Markdown becomes visible text, never markup."""

    def extendMarkdown(self, md):  # noqa: N802 - Markdown's API
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


_HEADING = re.compile(r"<(/?)h([1-6])\b")


def render_markdown(text: str, top: int = 1) -> SafeString:
    """Sanitised HTML; `top` is the level a `#` heading gets, so Markdown nested under a page's own
    h2 starts at h3 (headings must not jump levels)."""
    text = str(text or "")
    clean = _rendered.get((text, top))
    if clean is None:
        clean = _sanitised(text, top)
        _rendered.put((text, top), clean)
    return mark_safe(_icons(clean))  # noqa: S308 - nh3 output is the sanitised form


def _sanitised(text: str, top: int) -> str:
    html = markdown.markdown(
        strip_invisible(text),
        extensions=["tables", "sane_lists", "nl2br", _EscapeHtml()],
        output_format="html",
    )
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    if top > 1:
        clean = _HEADING.sub(lambda m: f"<{m.group(1)}h{min(6, int(m.group(2)) + top - 1)}", clean)
    return clean


class TextCache:
    """The most recently used results of a pure function of text, within a budget of characters
    (keys and values together): Python-Markdown takes about 1 ms a speech of 700 characters, and
    every load of a live page drew every finished speech again (100 debates x 3 viewers x their
    turns). A budget, not a count: a count small enough for a few long reports is too small for
    the hundreds of short speeches that 100 debates keep on screen, and a least-recently-used
    cache smaller than what is read round and round finds nothing."""

    def __init__(self, budget: int):
        self.budget = budget
        self.size = 0
        self._items: OrderedDict[tuple[str, int], str] = OrderedDict()
        self._lock = threading.Lock()  # pages render on several threads

    def get(self, key: tuple[str, int]) -> str | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, int], value: str) -> None:
        cost = len(key[0]) + len(value)
        if cost > self.budget // 8:  # one huge text would push out everything else
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self.size += cost
            while self.size > self.budget:
                (text, _top), dropped = self._items.popitem(last=False)
                self.size -= len(text) + len(dropped)


# 6 million characters (12-24 MB for Chinese text): 100 debates' finished speeches and reports.
_rendered = TextCache(6_000_000)


# Symbols used as icons (the roundtable's veto, the reports' warnings) need an emoji font, which
# many systems lack (an empty box then): on a page they become a CSS shape with a text
# alternative. Exports keep the characters. Only text between tags is touched.
_ICON_OR_TAG = re.compile(r'(<[^>"]*(?:"[^"]*"[^>"]*)*>)|(\u26d4\ufe0f?|\u26a0\ufe0f?)')


def _icon(match: re.Match) -> str:
    if match.group(1):
        return match.group(1)
    veto = match.group(2).startswith("\u26d4")
    name, label = ("veto", gettext("Vetoed")) if veto else ("warn", gettext("Warning"))
    return f'<span class="icon icon-{name}" role="img" aria-label="{html.escape(label)}"></span>'


def _icons(safe_html: str) -> str:
    return _ICON_OR_TAG.sub(_icon, safe_html)


def with_icons(text) -> SafeString:
    """Plain text (escaped unless already safe) with its icon symbols drawn as on a page."""
    return mark_safe(_icons(str(conditional_escape(text))))  # noqa: S308 - escaped above


# -- text that leaves as a file (exports) -------------------------------------------------------

_CODE = re.compile(r"(```.*?(?:```|$)|~~~.*?(?:~~~|$)|`[^`\n]+`)", re.DOTALL)
_INLINE_LINK = re.compile(r"(\]\(\s*)(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)")
_REFERENCE = re.compile(r"^(\s{0,3}\[[^\]\n]+\]:\s*)(\S+)", re.MULTILINE)
_SAFE_DESTINATION = re.compile(r"^(https?:|mailto:|#|/|\.|[^:]*$)", re.IGNORECASE)


def _safe_destination(match: re.Match) -> str:
    destination = match.group(2)
    # Renderers decode entities and ignore control characters in a destination: judge what they see.
    seen = re.sub(r"[\x00-\x20]", "", html.unescape(destination.strip("<>"))).lower()
    return match.group(1) + (destination if _SAFE_DESTINATION.match(seen) else "#unsafe-link-removed")


def _inert_prose(text: str) -> str:
    text = text.replace("<", "&lt;")  # no tag, comment or autolink can open; `>` quotes stay quotes
    text = _INLINE_LINK.sub(_safe_destination, text)
    return _REFERENCE.sub(_safe_destination, text)


def inert_markdown(text: str) -> str:
    """Markdown for a file the user opens elsewhere: what our pages show, whatever renders it. Raw
    HTML outside code becomes visible text, links other than http(s)/mailto/relative lose their
    destination, invisible controls go; code spans and fences are kept as written."""
    parts = _CODE.split(strip_invisible(text or ""))
    return "".join(part if i % 2 else _inert_prose(part) for i, part in enumerate(parts))


def strip_invisible_deep(value):
    """Every string in a JSON-able structure, without invisible controls."""
    if isinstance(value, str):
        return strip_invisible(value)
    if isinstance(value, dict):
        return {strip_invisible(k): strip_invisible_deep(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strip_invisible_deep(v) for v in value]
    return value


# -- what a viewer who is not staff learns about the servers behind Agora -------------------------

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s,;)\]\"'<>]+", re.IGNORECASE)


def redact_urls(text: str, replacement: str) -> str:
    """Provider errors name the server's address (useful to staff, not to everyone who sees a
    debate): replace every URL in `text`."""

    def replace(match: re.Match) -> str:
        url = match.group(0)
        tail = len(url) - len(url.rstrip(".:!?"))  # sentence punctuation after the address stays
        return replacement + (url[-tail:] if tail else "")

    return _URL.sub(replace, text or "")
