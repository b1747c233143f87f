"""What a stream client is sent: the debate's state read in one snapshot, compared with what the
client holds (its cursor, `debates.api.cursor`), as a list of events.

The events, each with the client's new cursor as its id:

- `reset`      the Last-Event-ID was not one of this debate's: everything follows again;
- `turn`       a turn started (or a new attempt of one: drop the text held for it);
- `delta`      more text of a turn: append `text` (`offset`: the characters held before it);
- `replace`    the turn's text is `text`, whole (its stored text no longer starts with what was
               streamed, e.g. the engine cut or parsed the finished reply);
- `turn_done`  the turn ended (`state`, `error`, and a reasoning model's `thinking`, whole, apart
               from the text); its text is complete, never resent;
- `report`     the finished debate's report;
- `status`     the debate's status and tokens, when they change (a state, not a delta: a reconnect
               is sent it again unless its id is at the debate's current seq);
- `end`        the debate is over (done, failed, stopped, refused): the stream closes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import translation

from agora.text import strip_invisible
from debates import exports
from debates.api.cursor import Cursor, Mark
from debates.models import FINAL_STATUSES, Debate, Report, Turn
from debates.rendering import strip_invisible_deep
from debates.templatetags.agora import error_for, tr
from personas.models import name_in, names_by_language


@dataclass
class TurnRow:
    pk: int
    key: str
    position: int
    round: int
    phase: str
    speaker: str
    speaker_name: str
    state: str
    error: str
    attempt: int
    text: str = ""  # not read when the client holds the whole turn already
    thinking: str = ""  # a reasoning model's, sent whole with `turn_done`
    speaker_name_en: str = ""
    shown_name: str = ""  # the speaker's name in the stream's language


@dataclass
class State:
    seq: int
    status: dict
    turns: list[TurnRow] = field(default_factory=list)
    report: dict | None = None
    reset: bool = False  # the client's cursor was not one of this debate's

    @property
    def final(self) -> bool:
        return self.status["status"] in FINAL_STATUSES


@dataclass
class Follower:
    """One stream's client: its cursor, and the status it was last sent."""

    cursor: Cursor
    status: dict | None = None
    rejected: bool = False  # its Last-Event-ID could not be read


def read(debate_id: int, follower: Follower, *, language: str, internals: bool) -> State | None:
    """The debate as the follower needs it (None: it is gone). Runs in a worker thread."""
    with translation.override(language), transaction.atomic():
        if connection.vendor == "postgresql":  # one snapshot for every query, as SQLite's transaction is
            with connection.cursor() as db:
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        debate = Debate.objects.filter(pk=debate_id).first()
        if debate is None:
            return None
        columns = ("pk", "key", "position", "round", "phase", "speaker_slug", "speaker_name", "state", "error")
        rows = [
            TurnRow(*values[:-2], attempt=len(values[-1]), speaker_name_en=values[-2])
            for values in debate.turns.order_by("pk").values_list(*columns, "speaker_name_en", "history")
        ]
        reset = not _fits(follower.cursor, debate.seq, rows)
        if reset:
            follower.cursor = Cursor()
        wanted = [row.pk for row in rows if not _holds_all(follower.cursor, row)]
        read_rows = Turn.objects.filter(pk__in=wanted).values_list("pk", "text", "thinking") if wanted else []
        texts = {pk: (text, thinking) for pk, text, thinking in read_rows}
        for row in rows:
            row.text, row.thinking = texts.get(row.pk, ("", ""))
            row.error = error_for(row.error, internals)
            row.shown_name = name_in(language, row.speaker_name, row.speaker_name_en)
        state = State(debate.seq, _status(debate, internals), rows, reset=reset or follower.rejected)
        follower.rejected = False
        if not follower.cursor.report:
            report = Report.objects.select_related("debate").filter(debate_id=debate_id).first()
            if report is not None:
                state.report = {"verdict_markdown": exports.verdict_markdown(report), "data": report.data}
        return state


def _fits(cursor: Cursor, seq: int, rows: list[TurnRow]) -> bool:
    """Whether the cursor can be this debate's: no later seq, no unknown turn, no future attempt."""
    attempts = {row.pk: row.attempt for row in rows}
    if cursor.seq > seq or not cursor.resolve(set(attempts)):
        return False
    return all(mark.attempt <= attempts[pk] for pk, mark in cursor.turns.items())


def _holds_all(cursor: Cursor, row: TurnRow) -> bool:
    mark = cursor.turns.get(row.pk)
    return mark is not None and mark.done and mark.attempt == row.attempt


def _status(debate: Debate, internals: bool) -> dict:
    return {
        "status": debate.status,
        "detail": error_for(tr(debate.status_text or debate.status_detail), internals),
        "tokens": debate.usage(),
    }


def changes(state: State, follower: Follower) -> Iterator[tuple[str, dict]]:
    """The events that bring the follower to `state`. Its cursor is updated before each event is
    yielded, so the id written with an event says what the client holds once it has it."""
    cursor = follower.cursor
    if state.reset:
        yield "reset", {}
    for row in state.turns:  # in id order, which is transcript order (see debates.api.cursor)
        mark = cursor.turns.get(row.pk)
        if mark is None or mark.attempt != row.attempt:
            mark = cursor.turns[row.pk] = Mark(row.attempt)
            yield "turn", _turn(row)
        if mark.done:
            continue
        yield from _text(row, mark)
        if row.state != Turn.State.RUNNING:
            mark.done = True
            done = {"turn": row.pk, "state": row.state, "error": row.error}
            yield "turn_done", {**done, "thinking": strip_invisible(row.thinking)} if row.thinking else done
    if state.report is not None and not cursor.report:
        cursor.report = True
        yield "report", strip_invisible_deep(state.report)
    # Everything of this seq but the status is delivered: from the status event on, the id says
    # the client is at this seq, and a reconnect at the same seq is not sent the status again.
    resumed_here = follower.status is None and cursor.seq == state.seq
    cursor.seq = state.seq
    if state.status != follower.status and not resumed_here:
        follower.status = state.status
        yield "status", state.status
    follower.status = state.status
    if state.final:
        yield "end", {"status": state.status["status"]}


def _turn(row: TurnRow) -> dict:
    return {
        "turn": row.pk,
        "key": row.key,
        "attempt": row.attempt,
        "position": row.position,
        "round": row.round,
        "phase": row.phase,
        "speaker": row.speaker,
        # In the stream's language (the request's, else the token owner's), and in each language.
        "speaker_name": strip_invisible(row.shown_name or row.speaker_name),
        "speaker_names": names_by_language(row.speaker_name, row.speaker_name_en),
    }


def _text(row: TurnRow, mark: Mark) -> Iterator[tuple[str, dict]]:
    if not mark.holds_start_of(row.text):
        mark.sent, mark.crc = 0, 0
        mark.add(row.text)
        yield "replace", {"turn": row.pk, "text": strip_invisible(row.text)}
    elif len(row.text) > mark.sent:
        offset = len(strip_invisible(row.text[: mark.sent]))
        chunk = row.text[mark.sent :]
        mark.add(chunk)
        # Invisible controls are dropped as everywhere else; a chunk of nothing else needs no event.
        if visible := strip_invisible(chunk):
            yield "delta", {"turn": row.pk, "offset": offset, "text": visible}
