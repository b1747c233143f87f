"""HTML fragments for the live page, rendered by templates (`debates/_live.html` partials).

The page, the WebSocket catch-up and the live frames all render from the same partials, so a
viewer sees the same markup however it arrived. `snapshot` reads a debate's visible state in one
consistent transaction together with its `seq`, the number of the last visible change.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.db import connection, transaction
from django.template.loader import render_to_string
from django.utils import translation

from debates import table_change, time_left
from debates.engine.reading import fold_rewrites, replaced_key
from debates.models import Debate, Turn

PARTS = "debates/_live.html"


def languages() -> list[str]:
    return [code for code, _name in settings.LANGUAGES]


def group(debate_id: int, language: str) -> str:
    """The channel group of a debate's viewers who read `language` (frames differ by language)."""
    return f"debate-{debate_id}-{language}"


def groups(debate_id: int) -> dict[str, str]:
    return {language: group(debate_id, language) for language in languages()}


def watched(groups_by_language: dict[str, str], layer, *, ask: bool = False) -> list[str]:
    """The languages a frame of the debate must be drawn in (`groups_by_language`: its `groups`,
    built once by the caller: this runs for every text frame): those someone watches it in, where
    the channel layer is this process's own (in-memory: every viewer of the process is a member of
    its groups, and no other process has any); with Redis, whose viewers may be in any process,
    those Redis has a subscriber for when `ask` (one round trip: for the frames drawn in a worker
    thread, a turn's or a phase's, not for each text frame) and else every language.

    Call it after the frame's change committed: a viewer who joins a group later reads the
    database after joining (debates.consumers; with Redis, once Redis confirmed the join), so it
    finds that change there; one who joined before is a member here. Drawing a frame is most of a
    phase's or a turn's cost in the process, and most debates are watched in one language or none."""
    if isinstance(layer, InMemoryChannelLayer):
        members = layer.groups
        return [language for language, name in groups_by_language.items() if members.get(name)]
    if ask and hasattr(layer, "subscribed_sync"):
        subscribed = layer.subscribed_sync(list(groups_by_language.values()))
        if subscribed is not None:
            return [language for language, name in groups_by_language.items() if name in subscribed]
    return list(groups_by_language)


def in_every_language(draw, only: list[str] | None = None) -> dict[str, str]:
    """`draw()` (a frame) once per language (`only`: those), each with its catalogue active."""
    drawn = {}
    for language in languages() if only is None else only:
        with translation.override(language):
            drawn[language] = draw()
    return drawn


@contextmanager
def consistent_read():
    """One snapshot for several queries: SQLite's transaction already is one; PostgreSQL needs
    REPEATABLE READ (its default READ COMMITTED takes a fresh snapshot per statement)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


@dataclass
class Snapshot:
    debate: Debate
    seq: int
    entries: list = field(default_factory=list)  # phases (dicts) and turns, in transcript order
    report: object | None = None

    def context(self, **extra) -> dict:
        return {
            "debate": self.debate,
            "seq": self.seq,
            "entries": self.entries,
            "sections": sections_of(self.entries),
            "stage": stage_of(self.debate, [e for e in self.entries if not isinstance(e, dict)]),
            "report": self.report,
            "streaming_tokens": 0,
            "streaming_thinking": 0,
            "show_internals": False,  # frames go to every viewer: no provider addresses
            **extra,
        }


def entries_of(debate: Debate, turns: list[Turn]) -> list:
    items = [(p["position"], 0, {"is_phase": True, **p}) for p in debate.phases]
    items += [(t.position, 1, t) for t in turns]
    return [item for _, _, item in sorted(items, key=lambda x: (x[0], x[1]))]


def sections_of(entries: list) -> list[dict]:
    """The transcript as phase sections, each with its turns (turns before any phase: a section
    without a heading). A parallel phase's turns are drawn side by side. An attempt a format had
    written again is no turn of its own: it is folded under the turn that replaced it
    (`turn.discarded`)."""
    shown = {id(t): earlier for t, earlier in fold_rewrites(_turns(entries), key=lambda t: t.key)}
    sections = [{"phase": None, "turns": []}]
    for entry in entries:
        if isinstance(entry, dict):
            sections.append({"phase": entry, "turns": []})
        elif id(entry) in shown:
            entry.discarded = shown[id(entry)]
            sections[-1]["turns"].append(entry)
    return [s for s in sections if s["phase"] or s["turns"]]


def _turns(entries: list) -> list:
    return [e for e in entries if not isinstance(e, dict)]


def stage_of(debate: Debate, turns=None, drawn=None) -> dict:
    """What the sticky stage shows: the phase and round now, who is speaking, the budget.
    `drawn` (debates.known_turns.Drawn): the turns as the running debate's sink knows them."""
    unfinished = (Turn.State.RUNNING, Turn.State.FAILED, Turn.State.INTERRUPTED)
    if turns is None and drawn is not None:
        turns = drawn.turns
    if turns is None:
        if not hasattr(debate, "unfinished_drawn"):  # once for the stage of every language
            # debate_id too: the related manager reads it from every row (a query each, deferred).
            only = ("debate_id", "speaker_name", "speaker_name_en", "state")
            rows = debate.turns.filter(state__in=unfinished).only(*only)
            debate.unfinished_drawn = list(rows)
        turns = debate.unfinished_drawn
    phase = debate.phases[-1] if debate.phases else None
    speaking = [t.speaker_in() for t in turns if t.state == Turn.State.RUNNING]  # in the frame's language
    used = debate.total_tokens
    title = (phase or {}).get("title")
    return {
        "phase": phase,
        "phase_label": _beside_the_counter(title),
        "round": phase["round"] if phase and phase.get("round") else None,
        "rounds": debate.rounds_planned,
        "speaking": speaking,
        "failed_turn": any(t.state in unfinished[1:] for t in turns),
        "percent": min(100, round(100 * used / debate.token_cap)) if debate.token_cap else None,
        "table": table_change.table_at_checkpoint(debate) if debate.status == "waiting" else None,
        "left": left_of(debate, drawn),
    }


def _beside_the_counter(title):
    """The phase's title as the stage shows it after "Round n of N": a title that only names its round
    says nothing more, and one that names its round, then its own name, is shown by that name
    ("Round 1 of 1 · Round 1 · Opening statements" said the round twice)."""
    if not isinstance(title, dict):
        return title
    if title.get("msgid") == "Round %(n)d":
        return None
    if title.get("msgid") == "Round %(n)d · %(name)s":
        return (title.get("params") or {}).get("name")
    return title


def left_of(debate: Debate, drawn=None) -> dict | None:
    """The time left while it runs: {"seconds", "minutes"} once the debate has a token rate,
    {} before (estimating); None when it is not running."""
    if debate.status != "running":
        return None
    if not hasattr(debate, "estimate_drawn"):  # once for the stage of every language
        debate.estimate_drawn = time_left.estimate(debate, drawn)
    estimate = debate.estimate_drawn
    if estimate is None or estimate.seconds is None:
        return {}
    return {"seconds": estimate.seconds, "minutes": int(estimate.seconds / 60 + 0.5)}


def snapshot(debate_id: int) -> Snapshot:
    with consistent_read():
        debate = Debate.objects.select_related("owner").get(pk=debate_id)
        turns = list(debate.turns.all())
        report = getattr(debate, "report", None) if hasattr(debate, "report") else None
    return Snapshot(debate, debate.seq, entries_of(debate, turns), report)


def part(name: str, **context) -> str:
    context.setdefault("show_internals", False)  # frames go to every viewer: no provider addresses
    context.setdefault("streaming_tokens", 0)
    context.setdefault("streaming_thinking", 0)
    return render_to_string(f"{PARTS}#{name}", context)


LIVE_REGIONS = ("status", "announce", "actions", "warnings", "transcript", "report")


def full(snap: Snapshot) -> str:
    """Every live region at once, each swapped by id: the WebSocket catch-up."""
    context = snap.context(oob=True)
    return "".join(part(name, **context) for name in LIVE_REGIONS)


def full_in(snap: Snapshot, language: str) -> str:
    with translation.override(language):
        return full(snap)


def delta(turn_pk: int, text: str) -> str:
    return part("delta", turn_pk=turn_pk, text=text)


def turn(turn_obj: Turn, *, new: bool, section: int | None = None) -> str:
    """A turn's article: appended to its phase's section when new (`section`: that phase's
    position), else replacing itself."""
    where = f"beforeend:#phase-{section}-turns" if section else "beforeend:#transcript"
    replaced = replaced_key(turn_obj.key)
    earlier = (
        list(Turn.objects.filter(debate_id=turn_obj.debate_id, key=replaced).select_related("debate"))
        if replaced
        else []
    )
    turn_obj.discarded = earlier
    drawn = part("turn", turn=turn_obj, oob=where if new else "outerHTML")
    if new:  # the attempt it replaces leaves the transcript: it is shown folded under this one
        drawn += "".join(f'<div id="turn-{e.pk}" hx-swap-oob="delete"></div>' for e in earlier)
    return drawn


def phase(entry: dict) -> str:
    section = {"phase": {"is_phase": True, **entry}, "turns": []}
    return part("phase_section", section=section, oob="beforeend:#transcript")


def status(debate: Debate, drawn=None) -> str:
    """The stage, the screen reader's announcement and the actions: what changes with the state
    (`drawn`: the turns as the running debate's sink knows them, debates.known_turns)."""
    context = {"debate": debate, "stage": stage_of(debate, drawn=drawn), "oob": True}
    return part("status", **context) + part("announce", **context) + part("actions", **context)


def meter(debate: Debate, streaming_tokens: int = 0, streaming_thinking: int = 0) -> str:
    return part(
        "meter", debate=debate, streaming_tokens=streaming_tokens, streaming_thinking=streaming_thinking, oob=True
    )


def thinking_delta(turn_pk: int, text: str) -> str:
    return part("thinking_delta", turn_pk=turn_pk, text=text)


def warnings(debate: Debate) -> str:
    return part("warnings", debate=debate, oob=True)


def report(debate: Debate, report_obj) -> str:
    return part("report", debate=debate, report=report_obj, oob=True)
