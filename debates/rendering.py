"""Markdown from models and users, made safe for a page.

Model output is untrusted: Markdown is rendered with raw HTML escaped, then the result is cleaned
by nh3 (an allowlist sanitiser) so no script, event handler, `javascript:`/`data:` link or
comment survives. Unicode direction overrides and zero-width characters are removed first, so text
cannot visually disguise itself.
"""

from __future__ import annotations

import re

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

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
# Bidi overrides/isolates and zero-width characters (not ZWJ, which emoji and some scripts need).
INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200c\u200e\u200f\u2060\ufeff\x00]")


def strip_invisible(text: str) -> str:
    return INVISIBLE.sub("", text)


class _EscapeHtml(markdown.Extension):
    """Raw HTML in Markdown becomes visible text, never markup."""

    def extendMarkdown(self, md):  # noqa: N802 - Markdown's API
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


def render_markdown(text: str) -> SafeString:
    html = markdown.markdown(
        strip_invisible(text or ""),
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
    return mark_safe(clean)  # noqa: S308 - nh3 output is the sanitised form
