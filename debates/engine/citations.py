"""Mechanical citation check: a cited point must exist in the speech it cites.

Speakers cite as 【引用 费曼·R1】“原话片段” (or [Feynman R1] "quoted words"). The check normalises
punctuation and whitespace, then looks the quoted words up in the cited speech.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from debates.engine.i18n import gettext_noop
from debates.engine.text import normalise

# Why a citation failed: msgids, so the report can say it in the reader's language.
UNKNOWN_SPEAKER = gettext_noop("the cited role does not exist")
NO_SUCH_SPEECH = gettext_noop("the cited speech does not exist")
NOT_FOUND = gettext_noop("the cited speech does not contain these words")

CITATION_RE = re.compile(
    r"[【\[〔(（]\s*(?:引用|cite[sd]?|ref)?\s*[:：]?\s*"
    # A name may hold spaces ("de Bono", "Charlie Munger"), never at either end.
    r"(?P<speaker>[^\]】〕)）·:：\s](?:[^\]】〕)）·:：\n]{0,38}?[^\]】〕)）·:：\s])?)\s*[·:：\s,，]?\s*R(?P<round>\d)"
    r"\s*[\]】〕)）]"
    r"\s*[:：]?\s*[“\"「『](?P<quote>[^”\"」』]{2,400})[”\"」』]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Citation:
    speaker: str  # as written
    round: int
    quote: str


@dataclass(frozen=True)
class CitationCheck:
    citing: str  # the turn key that cites
    citation: Citation
    resolved: str | None  # the cited persona slug, when the name resolved
    ok: bool
    reason: str = ""


def find_citations(text: str) -> list[Citation]:
    return [
        Citation(m.group("speaker").strip(), int(m.group("round")), m.group("quote").strip())
        for m in CITATION_RE.finditer(text)
    ]


def check(
    citing_key: str,
    text: str,
    speeches: dict[tuple[str, int], str],
    aliases: dict[str, str],
) -> list[CitationCheck]:
    """`speeches` maps (persona slug, round) to text; `aliases` maps lowercased names/slugs to slugs."""
    results = []
    for citation in find_citations(text):
        slug = aliases.get(citation.speaker.lower())
        if slug is None:
            results.append(CitationCheck(citing_key, citation, None, False, UNKNOWN_SPEAKER))
            continue
        cited = speeches.get((slug, citation.round))
        if cited is None:
            results.append(CitationCheck(citing_key, citation, slug, False, NO_SUCH_SPEECH))
        elif normalise(citation.quote) and normalise(citation.quote) in normalise(cited):
            results.append(CitationCheck(citing_key, citation, slug, True))
        else:
            results.append(CitationCheck(citing_key, citation, slug, False, NOT_FOUND))
    return results
