"""The event stream's resume rule: every event's `id:` is the client's cursor, exactly what it
holds after that event, so a reconnect with `Last-Event-ID` gets every remaining character of
every turn exactly once (no gap, no repeat), like the live page's seq rule.

The database alone cannot say what a client held at an older seq (a turn's text only grows, and
its final text may differ from what was streamed), so the cursor says it, per turn:

- `P~Q`        the turns with ids P..Q (of this debate) finished on their first attempt, all sent;
- `P-A-d`      turn P's attempt A finished, all sent;
- `P-A-S-C`    turn P's attempt A is being streamed: S characters sent, whose CRC-32 is C.

The whole id is `v1.<seq>.<report sent: 0|1>.<turns, comma-separated>`, numbers in base 36, turns
in id order. A turn's id order is its transcript order, so the turns a client knows are always the
debate's first ones, and runs of finished turns fold into one `P~Q`.

The CRC lets the server check, on resume, that what the client holds is still the beginning of
the turn's stored text: the engine's final text may differ from the streamed one (a reply cut at
its character limit, structured output parsed, a search turn's sources written at once). Then the
client gets a `replace` with the whole text instead of a `delta`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

VERSION = "v1"
MAX_LENGTH = 16_000  # a longer id is not one of ours


@dataclass
class Mark:
    """What a client holds of one turn."""

    attempt: int = 0  # a retried or regenerated turn starts again: its text is new
    sent: int = 0  # characters of the stored text delivered (before invisible ones are removed)
    crc: int = 0  # CRC-32 of those characters, UTF-8
    done: bool = False  # its `turn_done` was delivered

    def add(self, text: str) -> None:
        self.sent += len(text)
        self.crc = zlib.crc32(text.encode(), self.crc)

    def holds_start_of(self, text: str) -> bool:
        return len(text) >= self.sent and zlib.crc32(text[: self.sent].encode()) == self.crc


@dataclass
class Cursor:
    seq: int = 0
    report: bool = False
    turns: dict[int, Mark] = field(default_factory=dict)
    ranges: list[tuple[int, int]] = field(default_factory=list)  # decoded `P~Q`, until resolved

    def encode(self) -> str:
        parts, run = [], []

        def close_run():
            if run:
                parts.append(f"{_b36(run[0])}~{_b36(run[-1])}")
                run.clear()

        for pk in sorted(self.turns):
            mark = self.turns[pk]
            if mark.done and mark.attempt == 0:
                run.append(pk)
                continue
            close_run()
            if mark.done:
                parts.append(f"{_b36(pk)}-{_b36(mark.attempt)}-d")
            else:
                parts.append("-".join(_b36(n) for n in (pk, mark.attempt, mark.sent, mark.crc)))
        close_run()
        return f"{VERSION}.{_b36(self.seq)}.{int(self.report)}.{','.join(parts)}"

    @classmethod
    def decode(cls, text: str | None) -> Cursor | None:
        """The cursor an id names, or None when it is not one of ours (then the stream starts over)."""
        if not text or len(text) > MAX_LENGTH:
            return None
        try:
            version, seq, report, entries = text.strip().split(".")
            if version != VERSION or report not in ("0", "1"):
                return None
            cursor = cls(seq=_int36(seq), report=report == "1")
            for entry in filter(None, entries.split(",")):
                cursor._read(entry)
        except ValueError:
            return None
        return cursor

    def _read(self, entry: str) -> None:
        if "~" in entry:
            low, high = (_int36(n) for n in entry.split("~"))
            if low > high:
                raise ValueError(entry)
            self.ranges.append((low, high))
            return
        fields = entry.split("-")
        pk = _int36(fields[0])
        if pk in self.turns:
            raise ValueError(entry)
        if len(fields) == 3 and fields[2] == "d":
            self.turns[pk] = Mark(_int36(fields[1]), done=True)
        elif len(fields) == 4:
            self.turns[pk] = Mark(*(_int36(n) for n in fields[1:]))
        else:
            raise ValueError(entry)

    def resolve(self, pks: set[int]) -> bool:
        """Match the decoded cursor to the debate's turns: ranges become marks of the turns in
        them. False when it names a turn the debate does not have (it is not this debate's)."""
        if any(pk not in pks for pk in self.turns):
            return False
        for low, high in self.ranges:
            for pk in pks:
                if low <= pk <= high:
                    if pk in self.turns:
                        return False
                    self.turns[pk] = Mark(done=True)
        self.ranges = []
        return True


def _b36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def _int36(text: str) -> int:
    if not text or not text.isalnum() or not text.isascii() or text != text.lower():
        raise ValueError(text)
    return int(text, 36)
