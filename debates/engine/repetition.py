"""A reply that repeats itself: found while it streams, cut there, the repetition removed.

A small model sometimes falls into a loop: one sentence (or a few) written again and again until
the turn's allowance or deadline ends it (one turn of a reasoning distill repeated a sentence for
nine minutes). `RepetitionGuard` watches the tail of a streaming reply for a run of the same
n-gram unit, verbatim (digits read as one digit, so "第1点…第2点…" is the same unit), written at
least `copies` times in a row over at least `span` characters. Found, the turn stops reading and
keeps its text up to the end of the unit's first copy (at a sentence end where one is near).

It reads characters, so Chinese and English alike. What it never cuts: a unit without two
distinct letters or CJK characters (a table rule, a row of dashes, "哈哈哈"), a short phrase said
twice or three times (anaphora, a refrain), a list whose items share their structure but not
their words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_PERIOD = 4  # characters in the repeated unit, at least
MAX_PERIOD = 400  # a paragraph looping
COPIES = 3  # the unit written this many times in a row, at least
SPAN = 80  # over this many characters, at least (a short unit needs more copies)
# Characters streamed between two looks at the tail. A look scans up to 2,400 characters, so this
# is the token path's cost: every 16 it was 90 µs a delta (3-character deltas), every 64 it is 26 µs.
CHECK_EVERY = 64
SENTENCE_END = "。！？.!?；;…\n"
_TOKENS = re.compile(r"\d+|\D", re.UNICODE)
_WORD = re.compile(r"[^\W\d_]", re.UNICODE)  # a letter of any script (CJK included)


@dataclass(frozen=True)
class Repetition:
    kept: str  # the reply up to the end of the unit's first copy
    unit: str  # one copy of what repeated
    copies: int  # whole copies seen
    removed: int  # characters dropped


def _wordy(unit: str) -> bool:
    return len(set(_WORD.findall(unit))) >= 2


def find(text: str) -> Repetition | None:
    """The repetition at the end of `text`, if its tail is a run of one unit written `COPIES`
    times or more over `SPAN` characters or more; else None."""
    # A run of digits reads as one "0" (第9点 and 第10点 are the same unit); `at` maps back.
    folded_parts, at = [], []
    for match in _TOKENS.finditer(text):
        folded_parts.append("0" if match.group()[0].isdigit() else match.group())
        at.append(match.start())
    folded = "".join(folded_parts)
    at.append(len(text))
    n = len(folded)
    for period in range(MIN_PERIOD, min(MAX_PERIOD, n // COPIES) + 1):
        # The periodic run at the end: positions i with folded[i] == folded[i - period].
        run = 0
        while run < n - period and folded[n - 1 - run] == folded[n - 1 - run - period]:
            run += 1
        length = run + period  # the repeated region, first copy included
        copies = length // period
        if copies < COPIES or length < SPAN:
            continue
        start, end = at[n - length], at[n - length + period]
        unit = text[start:end]
        if not _wordy(unit):
            continue
        n_text = len(text)
        # A rotated unit ("ent. I repeat the argum") ends at its sentence end if one is near.
        if text[end - 1] not in SENTENCE_END:
            ahead = next((i for i in range(end, min(n_text, end + len(unit))) if text[i] in SENTENCE_END), None)
            if ahead is not None:
                end = ahead + 1
        kept = text[:end].rstrip()
        return Repetition(kept, unit, copies, len(text) - len(kept))
    return None


class RepetitionGuard:
    """Fed a streaming reply's deltas; `add` is true once its tail repeats itself (`found`)."""

    # Only the tail can hold a run a look has not seen yet: what falls out of it is set aside,
    # never joined again until a loop is found (a long reply costs no more per look than a short).
    WINDOW = 2 * COPIES * MAX_PERIOD

    def __init__(self) -> None:
        self.head: list[str] = []
        self.tail = ""
        self.length = 0
        self.checked_at = 0
        self.found: Repetition | None = None

    def add(self, delta: str) -> bool:
        self.tail += delta
        self.length += len(delta)
        if self.length - self.checked_at < CHECK_EVERY:
            return False
        self.checked_at = self.length
        if len(self.tail) > self.WINDOW:
            self.head.append(self.tail[: -self.WINDOW])
            self.tail = self.tail[-self.WINDOW :]
        found = find(self.tail)
        if found is not None:
            self.found = Repetition("".join(self.head) + found.kept, found.unit, found.copies, found.removed)
        return self.found is not None
