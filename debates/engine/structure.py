"""The labelled parts a turn must write, as a grammar a local llama.cpp server enforces.

A 1.5B model cannot be argued into a structure: it copies the prompt's headings, skips parts or
runs one into the next. llama.cpp's server takes a GBNF grammar per request and samples only what
the grammar allows, so a `Form` here makes every part come out, in order, labelled, filled and
within its length, and the reply end after the last part. Remote providers get the same parts as
prompt text only (they ignore grammars).

Lengths are in characters. `Form.fit(max_tokens)` shrinks the free-text parts, in proportion,
until the longest reply the grammar allows fits in the turn's token budget (at one token per
character, the worst case for Chinese), so the budget never cuts a reply off inside a part, which
is what the grammar is there to prevent.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, replace

# One character of a value: no line break, and no colon of either width, so a value never holds a
# label of its own ("…立场变化：转向" run into the speech, "置信度: 高。小结: …" inside a thesis); no
# '#' or backtick, so no heading or code fence copied from the prompt's Markdown.
ANY = r"[^\n\r：:#`]"
FIRST = r"[^\n\r：:#` ]"  # a value starts at once, not with a space
# A value of several paragraphs may break its line anywhere it likes: bounding each line instead
# cut words in two ("搬\n动") wherever the model reached the bound mid-sentence. Without a colon a
# line inside it still cannot be a label.
PARAGRAPHS = r"[^\r：:#`]"


# A list item numbered twice, the form's "2. …" copied before the model's own ("2. 2. 对于公司…"):
# one number stays. Not before a decimal ("1. 1.5 times").
_TWICE_NUMBERED = re.compile(r"(?m)^([ \t]*(\d{1,2})([.、)．]))[ \t]*\2\3(?!\d)")


@dataclass(frozen=True)
class Part:
    label: str  # written as "label：" at the start of its line
    chars: int = 0  # free text of at most this many characters …
    lines: int = 1  # … in one line, or (lines > 1) in paragraphs: the line breaks are the model's
    choices: tuple[str, ...] = ()  # or: one of these words …
    tail: int = 0  # … followed by at most this many characters (a half-sentence of reason)
    pattern: str = ""  # or: a GBNF expression (its length: `chars`)
    lead: str = ""  # free text that starts with these words, written by the grammar, not the model

    def size(self) -> int:
        """The most characters this part can take, its label and line break included."""
        value = max(map(len, self.choices)) + self.tail if self.choices else self.chars
        return len(self.label) + 2 + len(self.lead) + value

    def stopped_at_length(self, value: str) -> bool:
        """Whether the grammar ended `value` at this part's length: free text at (or just short of)
        its characters, or a choice's half-sentence (`tail`) at its own; a bare choice or a pattern
        never is. A value that ends a sentence there stays as it is (`_as_cut`)."""
        if self.pattern:
            return False
        if self.choices:
            chosen = max((c for c in self.choices if value.startswith(c)), key=len, default=None)
            return bool(self.tail) and chosen is not None and len(value) >= len(chosen) + self.tail
        # Within two characters of it too: with no token short enough left to fit, the bundled
        # model ended an English summary one character early ("…due to potential negative").
        return len(value) >= len(self.lead) + max(10, self.chars) - 2

    def rule(self, name: str) -> str:
        if self.pattern:
            return f"{name} ::= {self.pattern}"
        if self.choices:
            words = " | ".join(f'"{_escape(word)}"' for word in self.choices)
            return f"{name} ::= ({words})" + (f" {ANY}{{0,{self.tail}}}" if self.tail else "")
        chars, value = max(10, self.chars), PARAGRAPHS if self.lines > 1 else ANY
        if self.lead:
            return f'{name} ::= "{_escape(self.lead)}" {value}{{1,{chars}}}'
        return f"{name} ::= {FIRST} {value}{{0,{chars - 1}}}"


@dataclass(frozen=True)
class Form:
    parts: tuple[Part, ...]
    # What follows a label: the full-width colon in Chinese, ": " in English ("Speech: …"), so an
    # English debate's parts read as English and its parsers find them as they find Chinese ones.
    colon: str = "："

    def labels(self) -> list[str]:
        return [p.label for p in self.parts]

    def size(self) -> int:
        """The longest reply the grammar allows, in characters."""
        return sum(p.size() for p in self.parts)

    def fit(self, max_tokens: int) -> Form:
        """This form with its free-text parts shrunk in proportion (to at least 10 characters a
        line) so that `size() <= max_tokens` (characters; an English form, with its ": " colon,
        counts three characters a token); unchanged when it already fits. A part held at its
        minimum leaves the rest of the cut to the others, so short parts (a term of 16
        characters) do not push the whole over the budget."""
        # An English form's text takes about a token per 3 characters or more (Chinese: one per
        # character): sized as Chinese, an English speech was cut to a third of what it was asked.
        per_token = 1 if self.colon == "：" else 3
        room, parts = (max_tokens - 8) * per_token, list(self.parts)
        for _ in parts:
            excess = sum(p.size() for p in parts) - room
            free = [p for p in parts if p.chars > 10 * p.lines and not p.choices and not p.pattern]
            if excess <= 0 or not free:
                break
            total = sum(p.chars for p in free)
            parts = [
                replace(p, chars=max(10 * p.lines, p.chars - math.ceil(excess * p.chars / total))) if p in free else p
                for p in parts
            ]
        return replace(self, parts=tuple(parts))

    def tidy(self, text: str) -> str:
        """`text` with what a part copied of the form cut off: from a label written again at the
        start of a sentence inside a value ("…。小结，…" in the position change's half-sentence,
        "立场变化为“转向”…" at the end of a speech) to the end of that value, which only repeats
        what the part of that name says; and a list item numbered twice ("2. 2. …", the form's
        number copied before the model's own) with one number. Text that lacks a part is
        returned as it is."""
        starts = self._parts_in(text)
        if starts is None:
            return text
        # After a two-character label only punctuation counts ("理由是…" may be a sentence of the
        # value); a longer one is never a word of the value ("立场变化为…", "立场变化、“无”"). Any label followed by
        # "如下" / "as follows" only announces that part ("…行动机会。论据如下（2-3 条）。" ending
        # the bundled model's thesis, the form's hint copied).
        # A label followed at once by one of its part's choices is that part written again too
        # ("…确保遵循康威定律。置信度中。" ending the bundled model's thesis, debate 83).
        words = [
            rf"{re.escape(p.label)}(?:[，,。：:（(；;“]|如下|\s+as follows{'|是|为|、' if len(p.label) > 2 else ''}"
            + "".join(f"|{re.escape(c)}(?=[。.；;，,\\s]|$)" for c in p.choices)
            + ")"
            for p in self.parts
        ]
        echo = re.compile(rf"(?:(?<=[。！？；;.!?\n])|^)[\s#*]*(?:{'|'.join(words)})")
        pieces = [text[: starts[0][0]]]
        for n, (start, value_start) in enumerate(starts):
            end = starts[n + 1][0] if n + 1 < len(starts) else len(text)
            value = text[value_start:end]
            found = echo.search(value, 1)
            if found and value[: found.start()].strip():
                value = value[: found.start()].rstrip() + ("\n" if n + 1 < len(starts) else "")
            value = _TWICE_NUMBERED.sub(r"\1", value)
            pieces.append(text[start:value_start] + value)
        return "".join(pieces)

    def mark_cuts(self, text: str) -> str:
        """`text` (a reply written under this form's grammar) with each free-text part that the
        grammar stopped at its length ended as a cut: "…" in place of the clause's trailing comma,
        and without a lone letter of another script just before it. At its last allowed character
        the grammar lets the model write only a one-character token, and the bundled model's best
        one was often a stray letter ("scalability,혁", "modularity, и", "more柔"). Text that lacks
        a part is returned as it is."""
        starts = self._parts_in(text)
        if starts is None:
            return text
        pieces = [text[: starts[0][0]]]
        for n, (part, (start, value_start)) in enumerate(zip(self.parts, starts, strict=True)):
            last = n + 1 == len(starts)
            end = len(text) if last else starts[n + 1][0] - 1  # the next part's line break stays
            value = text[value_start:end]
            if part.stopped_at_length(value):
                value = _as_cut(value)
            pieces.append(text[start:value_start] + value + ("" if last else "\n"))
        return "".join(pieces)

    def _parts_in(self, text: str) -> list[tuple[int, int]] | None:
        """Where each part's line starts and where its value starts, in order; None when a part's
        label is missing."""
        starts, at = [], 0
        for label in self.labels():
            found = re.compile(rf"(?:^|\n){re.escape(label)}{re.escape(self.colon)}").search(text, at)
            if not found:
                return None
            start = found.start() + (text[found.start()] == "\n")
            starts.append((start, start + len(label) + len(self.colon)))
            at = starts[-1][1]
        return starts

    def grammar(self) -> str:
        """GBNF (llama.cpp's dialect): every part, in order, each on its own line."""
        sequence = " ".join(
            f'"{"" if n == 0 else chr(92) + "n"}{_escape(p.label)}{_escape(self.colon)}" p{n}'
            for n, p in enumerate(self.parts)
        )
        return "\n".join([f"root ::= {sequence}", *(p.rule(f"p{n}") for n, p in enumerate(self.parts))]) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


_SCRIPTS = ("CJK", "HANGUL", "CYRILLIC", "HIRAGANA", "KATAKANA", "ARABIC", "HEBREW", "THAI", "GREEK", "DEVANAGARI")


def _script(char: str) -> str | None:
    """A letter's script as far as a stray one matters: Latin letters and digits are never stray."""
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return next((script for script in _SCRIPTS if name.startswith(script)), None)


def _as_cut(value: str) -> str:
    """A value the grammar stopped at its length, ended as a cut (`Form.mark_cuts`)."""
    body = value.rstrip()
    while body and unicodedata.category(body[-1]) == "Cf":  # invisible ("employee-\u00ad"): hides the hyphen
        body = body[:-1].rstrip()
    last = _script(body[-1]) if body else None
    tail = 0
    while last and tail < len(body) and _script(body[-1 - tail]) == last:
        tail += 1
    if last and tail <= 3 and tail < len(body) and sum(_script(c) == last for c in body) == tail:
        body = body[:-tail].rstrip()  # a few letters of a script the value has nowhere else ("a单一")
    body = body.rstrip("<>|\\/[({~^=+-").rstrip()  # a lone symbol at the bound ("productivity,<")
    if body.endswith(("…", "。", "！", "？", ".", "!", "?", "”", "」", ")", "）")):
        return body
    return body.rstrip(" ,，、;；") + "…"
