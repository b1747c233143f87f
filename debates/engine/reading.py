"""How a finished turn reads to people: the same on the live page, the report and the exports.

A turn keeps its text as the model wrote it (the formats parse it: labels, a stance line, a
summary). A reader gets it shown:

- without the grammar's label for the speech itself ("正文：", "Speech: "), which says nothing;
  the other parts' labels ("立场变化", "Position change") are kept, in bold, as small headings;
- without its summary line when the summary is shown beside the speech (it was printed twice);
- without a first line that only says the debate's question again (small models open with it:
  the bundled one did in both languages, each speaker of a round);
- an attempt a format sent back and had written again (a duel speech that argued the other side,
  `duel:1:huineng` → `duel:1:huineng:again`; a host draft over its limit, `host:verdict` →
  `host:verdict-again`) is never shown as a speech of its own: it is folded under the turn that
  replaced it, marked as discarded.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from debates.engine.text import OWN_SUMMARY_LABELS, STRUCTURE_LABELS, restates

T = TypeVar("T")

# Turn keys of a rewrite: the key it ends with names the attempt it replaces.
REWRITE_SUFFIXES = (":again", "-again")
# A part that is the speech itself: its label is dropped, not shown as a heading.
BODY_LABELS = ("正文", "发言", "speech", "body")
# Labels a turn stored before its form's labels were kept with it (`data["parts"]`) may have.
KNOWN_LABELS = (
    *STRUCTURE_LABELS,
    "双方主张",
    "分歧所在",
    "可互相参照之处",
    "Speech",
    "Position change",
    "Summary",
    "Both positions",
    "Where they differ",
    "What each can take from the other",
)


_BODY_LABEL = re.compile(rf"\s*(?:{'|'.join(map(re.escape, BODY_LABELS))})\s*[:：]\s*", re.IGNORECASE)


def without_body_label(text: str) -> str:
    """A streaming speech without the label its form puts first ("正文：", "Speech: "): the reader
    sees the speech begin, as in the finished turn (`shown_speech`). The page's script does the
    same to the text arriving, from the labels the page carries (`data-body-labels`)."""
    found = _BODY_LABEL.match(text)
    return text[found.end() :] if found else text


def replaced_key(key: str) -> str | None:
    """The key of the attempt the turn `key` was written to replace, or None."""
    for suffix in REWRITE_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return None


def fold_rewrites(turns: Iterable[T], key: Callable[[T], str]) -> list[tuple[T, list[T]]]:
    """The turns as shown: each with the discarded attempts it replaced, those attempts left out
    of the list (an attempt whose rewrite has not started yet stays where it is)."""
    turns = list(turns)
    keys = {key(t) for t in turns}
    by_key = {key(t): t for t in turns}
    replaced = {replaced_key(key(t)) for t in turns} & keys
    shown = []
    for turn in turns:
        if key(turn) in replaced:
            continue
        earlier, at = [], replaced_key(key(turn))
        while at is not None and at in by_key:
            earlier.insert(0, by_key[at])
            at = replaced_key(at)
        shown.append((turn, earlier))
    return shown


def discarded_keys(keys: Iterable[str]) -> set[str]:
    """Of these turn keys, those a later rewrite replaced."""
    keys = set(keys)
    return {replaced_key(k) for k in keys} & keys


@functools.lru_cache(maxsize=64)
def _label_pattern(labels: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(label) for label in sorted(set(labels), key=len, reverse=True))
    return re.compile(
        rf"^[ \t>#*\-•]*(?:\*\*)?[ \t]*({alternatives})[ \t]*(?:\*\*)?[ \t]*([:：])[ \t]*(?:\*\*)?[ \t]*(.*)$",
        re.IGNORECASE,
    )


def shown_speech(text: str, parts: Sequence[str] | None = None, *, summary: str = "", question: str = "") -> str:
    """`text` as a reader sees it. `parts`: the labels of the form the turn was written to (its
    `data["parts"]`), beside the labels the formats use in either language; `summary`: the summary
    shown beside it, whose line then leaves the text; `question`: the debate's, whose echo as the
    first line goes. The speech's own label goes, other labels become bold headings of their line."""
    if not text:
        return ""
    # A model may answer in either language's labels, whatever the form asked: both are read.
    pattern = _label_pattern(tuple(dict.fromkeys((*(parts or ()), *KNOWN_LABELS))))
    summaries = {label.lower() for label in OWN_SUMMARY_LABELS}
    bodies = {label.lower() for label in BODY_LABELS}
    out: list[str] = []
    skipping = False
    for line in text.split("\n"):
        found = pattern.match(line)
        if found:
            label, colon, value = found.group(1), found.group(2), found.group(3).strip().strip("*").strip()
            skipping = False
            if summary and label.lower() in summaries:
                skipping = True  # shown beside the speech
                continue
            if label.lower() in bodies:
                out.append(value)
                continue
            out.append(f"**{label}**{colon}{' ' if colon == ':' else ''}{value}")
            continue
        if skipping:
            if not line.strip():
                skipping = False
                out.append(line)
            continue
        out.append(line)
    said = [n for n, line in enumerate(out) if line.strip()]
    if question and len(said) > 1 and restates(out[said[0]].strip(" #*>"), question):
        del out[said[0]]  # the question again, not the speech (a speech that is only that stays)
    return "\n".join(out).strip()
