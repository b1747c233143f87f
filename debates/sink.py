"""Engine events → database rows and batched HTML frames for the debate's channel group.

The sink is the only writer of a running debate's state. Every visible change increments
`Debate.seq` in the same transaction that writes it, and the frame announcing it carries that seq
and is sent only after the commit. A viewer that read the database at seq S (the page render or
the consumer's catch-up) therefore needs exactly the frames with seq > S: no gap, no repeat.

Text deltas are batched: they accumulate in memory, and the loop's flusher (debates.flusher)
writes every debate's pending text in one transaction per `frame_interval` and sends one frame per
debate, so database writes stay far below one per token whatever the number of debates. The first
delta after a quiet spell goes out at once; while text keeps coming, each interval's deltas share
a frame.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from debates import audience, frames
from debates import fast_frames as fast
from debates.engine import events as ev
from debates.engine.i18n import Text, verbatim
from debates.engine.report import warning_dict
from debates.flusher import flusher_for, storable
from debates.known_turns import Drawn, KnownTurn, KnownTurns
from debates.leases import LeaseLost
from debates.models import FINAL_STATUSES, Debate, Report, Seat, Status, Turn
from debates.pace import Pace
from debates.providers.base import estimate_tokens, token_counts, tokens_of
from debates.time_left import seats_of

log = logging.getLogger(__name__)

FINAL = {"done": Status.DONE, "failed": Status.FAILED, "stopped": Status.STOPPED, "refused": Status.REFUSED}
FRAME_INTERVAL = 0.04
# A text frame carries the token meter at most this often (seconds): a page draws it no more than
# four times a second, and every frame's copy cost the server a render per language and each page a
# parse and a swap it then threw away. A turn's end and every stage bring the exact figures.
METER_INTERVAL = 0.25


def as_text(value) -> dict:
    """An engine message as the database keeps it: its msgid and values, rendered per viewer."""
    if not value:
        return {}
    return value.as_dict() if isinstance(value, Text) else verbatim(str(value)).as_dict()


def attempt_record(turn: Turn) -> dict:
    """An earlier attempt of a turn, kept when the turn is regenerated. A crash leaves no usage
    from the server, so its tokens are estimated from what was sent and received."""
    prompt, completion = turn.prompt_tokens, turn.completion_tokens
    if not prompt and not completion:
        prompt = sum(estimate_tokens(m.get("content", "")) for m in turn.messages)
        completion = estimate_tokens(turn.text)
    return {
        "text": turn.text,
        "error": turn.error,
        "state": turn.state,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        **({"reasoning_tokens": turn.reasoning_tokens} if turn.reasoning_tokens else {}),
        "estimated": True,
        "cost": turn.cost,
    }


def _grow(counts: dict[str, tuple[int, int]], key: str, chunk: str) -> None:
    cjk, other = token_counts(chunk)
    before = counts.get(key, (0, 0))
    counts[key] = (before[0] + cjk, before[1] + other)


class DjangoSink:
    def __init__(
        self,
        debate_id: int,
        *,
        frame_interval: float = FRAME_INTERVAL,
        echo: ev.Sink | None = None,
        runner_id: str | None = None,
    ):
        self.debate_id = debate_id
        # With a runner id every write is fenced by the lease (debates.leases); losing it makes
        # the sink go quiet and stops the engine through `on_lease_lost`.
        self.runner_id = runner_id
        self.lost = False
        self.audience_window: tuple | None = None  # the audience panel's window last announced (#30)
        self.on_lease_lost = None
        self.groups = frames.groups(debate_id)  # one per language: each viewer reads their own
        self.frame_interval = frame_interval
        self.echo = echo  # e.g. the terminal printer of `manage.py debate`
        self.layer = get_channel_layer()
        self.lock = asyncio.Lock()
        self.pending: dict[str, list[str]] = {}  # text deltas the flusher has yet to write
        self.texts: dict[str, str] = {}
        # A reasoning model's thinking, as its text: pending, then written (running turns only).
        self.thinking_pending: dict[str, list[str]] = {}
        self.thoughts: dict[str, str] = {}
        self.thinking_counts: dict[str, tuple[int, int]] = {}
        self.counts: dict[str, tuple[int, int]] = {}  # per running turn: what estimate_tokens counts
        self.turn_pks: dict[str, int] = {}
        self.paces: dict[str, Pace] = {}  # per running turn: when its text arrived (the replay's)
        self.seq = 0
        self.position = 0
        self.section: int | None = None  # the position of the phase new turns belong to
        self.flusher = None
        self.debate: Debate | None = None  # the row as last read: the meter of delta frames
        self.meter_at = float("-inf")  # loop time of the last text frame that carried the meter
        self.known: KnownTurns | None = None  # what the stage reads of the turns (open() loads it)
        self.stats = {"frames": 0, "db_writes": 0, "deltas": 0}

    async def open(self) -> None:
        loaded = await database_sync_to_async(self._load)()
        self.seq, self.position, self.section, self.turn_pks, self.debate, self.known = loaded
        try:  # as the pages drew it: announced again only when a phase moves it
            self.audience_window = await database_sync_to_async(audience.window)(self.debate_id)
        except Exception:  # the audience must never stop a debate
            log.exception("debate %s: the audience could not be read", self.debate_id)

    def _load(self):
        debate = Debate.objects.get(pk=self.debate_id)
        top = debate.turns.aggregate(m=Max("position"))["m"] or 0
        section = max((p["position"] for p in debate.phases), default=None)  # where new turns go
        top = max(top, section or 0)
        fields = ("key", "pk", "round", "speaker_slug", "speaker_name", "speaker_name_en", "state", "completion_tokens")
        rows = list(debate.turns.values_list(*fields))  # in transcript order
        known = KnownTurns({key: KnownTurn(*rest) for key, _pk, *rest in rows}, seats_of(debate))
        return debate.seq, top, section, {key: pk for key, pk, *_ in rows}, debate, known

    async def close(self) -> None:
        await self.flush()

    # -- the engine's side ------------------------------------------------------------------
    async def emit(self, event: ev.Event) -> None:
        if self.lost:
            return
        if self.echo:
            await self.echo.emit(event)
        if self.flusher is None:  # the loop's, found on first use (an emit may come before open)
            self.flusher = flusher_for(self.frame_interval)
        if isinstance(event, ev.TextDelta):
            self.pending.setdefault(event.key, []).append(event.text)
            self.stats["deltas"] += 1
            self.flusher.want(self)
            return
        if isinstance(event, ev.ThinkingDelta):
            if event.key in self.thoughts:  # a turn that finished or failed is shown whole already
                self.thinking_pending.setdefault(event.key, []).append(event.text)
                self.flusher.want(self)
            return
        await self.flush()
        async with self.lock:
            handler = getattr(self, f"_on_{type(event).__name__}", None)
            if handler is None:
                return
            try:
                rendered = await database_sync_to_async(self._apply)(handler, event)
            except LeaseLost:
                self.lose()
                return
            if rendered:
                await self._send(rendered)
        # The audience's windows move (#30) when a phase starts and when the run ends (the report's
        # "after" vote among them): not at the report itself, whose status follows at once.
        if isinstance(event, (ev.PhaseStarted, ev.Finished)):
            try:
                self.audience_window = await audience.announce_changed(self.debate_id, self.audience_window)
            except Exception:  # the audience must never stop a debate
                log.exception("debate %s: the audience could not be told", self.debate_id)

    async def flush(self) -> None:
        """Every pending delta on this loop written and sent (this debate's among them)."""
        if self.flusher is not None:
            await self.flusher.flush()

    async def send_deltas(self, chunks: dict[str, str], thinking: dict[str, str] | None = None) -> None:
        """After the flusher committed `chunks` (turn key → text) and `thinking` (turn key → the
        thinking's new part) as this debate's next seq: one frame with the text, the thinking and
        (at most every METER_INTERVAL) the meter, built without the template engine (this runs for
        every debate every frame interval; `frames.fast` is tested equal to the templates)."""
        self.seq += 1
        self.stats["db_writes"] += 1
        for key, chunk in (thinking or {}).items():
            self.thoughts[key] = self.thoughts.get(key, "") + chunk
            _grow(self.thinking_counts, key, chunk)
        for key, chunk in chunks.items():
            self.texts[key] = self.texts.get(key, "") + chunk
            _grow(self.counts, key, chunk)
        watched = frames.watched(self.groups, self.layer)  # after the flusher's commit, as `_apply`
        if not watched:
            return  # nobody here to draw it for: the seq moved on, a later viewer reads the rows
        deltas = [fast.thinking(self.turn_pks[key], chunk) for key, chunk in (thinking or {}).items()]
        # The text only: the same in every language.
        deltas += [fast.delta(self.turn_pks[key], chunk) for key, chunk in chunks.items()]
        text = "".join(deltas)
        now = asyncio.get_running_loop().time()
        if now - self.meter_at < METER_INTERVAL:
            await self._send(dict.fromkeys(watched, text))
            return
        self.meter_at = now
        thinking_tokens = sum(map(tokens_of, self.thinking_counts.values()))
        streaming = sum(map(tokens_of, self.counts.values())) + thinking_tokens
        await self._send(
            {language: text + fast.meter(self.debate, streaming, language, thinking_tokens) for language in watched}
        )

    def lose(self) -> None:
        log.warning("debate %s: lease lost, another runner took over; this one stops", self.debate_id)
        self.lost = True
        if self.on_lease_lost:
            self.on_lease_lost()

    async def _send(self, rendered: dict[str, str]) -> None:
        """One frame, in every language (`rendered`: language → HTML), each to its own group."""
        self.stats["frames"] += 1
        try:
            for language, html in rendered.items():
                message = {"type": "debate.frame", "seq": self.seq, "html": html}
                await self.layer.group_send(self.groups[language], message)
        except Exception:  # a viewer-side failure must never stop the debate
            log.exception("could not send frame %s of debate %s", self.seq, self.debate_id)

    # -- database side (runs in a worker thread) ---------------------------------------------
    def _bump(self, *, reload: bool = True, **fields) -> Debate | None:
        if "status" in fields:
            fields = self._clock(fields)
        self.seq += 1
        debates = Debate.objects.filter(pk=self.debate_id)
        if self.runner_id:
            debates = debates.filter(runner_id=self.runner_id)
        if not debates.update(seq=self.seq, **fields):
            raise LeaseLost(self.debate_id)  # rolls back this whole transaction
        self.stats["db_writes"] += 1
        if reload:
            self.debate = Debate.objects.get(pk=self.debate_id)
        return self.debate

    def _clock(self, fields: dict) -> dict:
        """The running time across resumes: a span starts when the debate starts running (from
        `started_at`, `finished_at` cleared) and is added to `running_seconds` when it stops running
        (the checkpoint, a person's turn, a stop, the end). A span a crash cut off is not counted."""
        row = Debate.objects.filter(pk=self.debate_id).values("status", "started_at", "running_seconds").first()
        if row is None:
            return fields
        now = fields.get("started_at") or timezone.now()
        was, becomes = row["status"] == Status.RUNNING, fields["status"] == Status.RUNNING
        if was and not becomes and row["started_at"]:
            fields["running_seconds"] = row["running_seconds"] + max(0.0, (now - row["started_at"]).total_seconds())
        if becomes:
            fields["started_at"], fields["finished_at"] = now, None
        return fields

    def _drawn(self) -> Drawn | None:
        """The turns as this sink knows them, for the stage it draws (debates.known_turns); None
        before `open` (the stage then reads the rows)."""
        if self.known is None:
            return None
        thinking = self.thinking_counts
        return self.known.drawn({k: tokens_of(c) + tokens_of(thinking.get(k, (0, 0))) for k, c in self.counts.items()})

    def _turn_known(self, key: str, **fields) -> None:
        if self.known is not None and key in self.known.turns:
            for name, value in fields.items():
                setattr(self.known.turns[key], name, value)

    def _apply(self, handler, event) -> dict[str, str]:
        """Write the event's change (its handler returns how to draw it), then draw it once per
        language watched, outside the transaction (after the commit: `frames.watched`)."""
        with transaction.atomic():
            draw = handler(event)
        return frames.in_every_language(draw, frames.watched(self.groups, self.layer, ask=True)) if draw else {}

    def _on_Status(self, event: ev.Status) -> str:  # noqa: N802 - named after the event class
        status = FINAL.get(event.status, event.status)
        fields = {"status": status, "status_detail": str(event.detail)[:500], "status_text": as_text(event.detail)}
        now = timezone.now()
        if status == Status.RUNNING:
            fields["started_at"] = now
            fields["awaiting"] = {}  # whatever a person was asked, the run goes on without waiting
        if status in FINAL_STATUSES:
            fields["finished_at"] = now
        if status in (Status.DONE, Status.STOPPED, Status.FAILED):
            self._mark_running_turns(status)
        debate = self._bump(**fields)
        return lambda: frames.status(debate, self._drawn())

    def _mark_running_turns(self, status) -> None:
        # A stop or failure leaves no turn "running": its partial text stays, marked as cut short.
        state = Turn.State.INTERRUPTED if status == Status.STOPPED else Turn.State.FAILED
        running = Turn.objects.filter(debate_id=self.debate_id, state=Turn.State.RUNNING)
        for key, pace in self.paces.items():  # their pace so far, as a turn that ends keeps it
            running.filter(pk=self.turn_pks[key]).update(pace=pace.points)
        running.update(state=state)
        for turn in self.known.turns.values() if self.known is not None else ():
            if turn.state == Turn.State.RUNNING:
                turn.state = state

    def _on_PhaseStarted(self, event: ev.PhaseStarted) -> str:  # noqa: N802
        debate = Debate.objects.get(pk=self.debate_id)
        shown = [p for p in debate.phases if p["phase"] == event.phase and p["round"] == event.round]
        if shown:  # a resumed run announces phases it already showed: their turns go there
            self.section = shown[0]["position"]
            return ""
        self.position += 1
        title = as_text(event.title)
        entry = {"position": self.position, "round": event.round, "phase": event.phase, "title": title}
        if event.parallel:
            entry["parallel"] = True
        if event.note:
            entry["note"] = storable(event.note)
        self._bump(phases=[*debate.phases, entry])
        self.section = entry["position"]
        debate = self.debate
        return lambda: frames.phase(entry) + frames.status(debate, self._drawn())

    def _on_TurnStarted(self, event: ev.TurnStarted) -> str:  # noqa: N802
        fields = {
            "round": event.round,
            "phase": event.phase,
            "speaker_slug": event.speaker,
            "speaker_name": event.speaker_name,
            "speaker_name_en": event.speaker_name_en,
            "model": event.model,
            "messages": event.messages,
            "text": "",
            "thinking": "",
            "reasoning_tokens": 0,
            "state": Turn.State.RUNNING,
            "error": "",
            "finished_at": None,
            # This attempt is charged when it ends; until then the row must not carry the tokens of
            # the attempt that moves to history (they would count twice, or be copied by a crash).
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "usage_estimated": False,
            "cost": 0.0,
            "pace": [],  # the flusher adds a point per write (debates.pace)
        }
        existing = Turn.objects.filter(debate_id=self.debate_id, key=event.key).first()
        if existing:
            fields["started_at"] = timezone.now()  # this attempt's start: its pace counts from it
            # Regenerating an interrupted or failed turn: its earlier attempt goes to history, kept
            # with its tokens, even one a crash cut off before any text (its prompt was sent).
            fields["history"] = [*existing.history, attempt_record(existing)]
            Turn.objects.filter(pk=existing.pk).update(**fields)
            turn = Turn.objects.get(pk=existing.pk)
        else:
            self.position += 1
            turn = Turn.objects.create(debate_id=self.debate_id, key=event.key, position=self.position, **fields)
        self.turn_pks[event.key] = turn.pk
        self.paces[event.key] = Pace(turn.started_at.timestamp())
        self.texts[event.key] = ""
        self.counts[event.key] = (0, 0)
        self.thoughts[event.key] = ""
        self.thinking_counts[event.key] = (0, 0)
        if self.known is not None:  # a turn written again keeps its place, a new one comes last
            self.known.turns[event.key] = KnownTurn(
                event.round, event.speaker, event.speaker_name, event.speaker_name_en, Turn.State.RUNNING
            )
        return self._turn_frame(turn, self._bump(), new=existing is None, section=self.section)

    def _on_TurnFinished(self, event: ev.TurnFinished) -> str:  # noqa: N802
        if event.replayed:
            return ""
        Turn.objects.filter(debate_id=self.debate_id, key=event.key).update(
            text=storable(event.text),
            thinking=storable(event.thinking),
            summary=event.summary[:200],
            data=event.data,
            state=Turn.State.DONE,
            prompt_tokens=event.prompt_tokens,
            completion_tokens=event.completion_tokens,
            reasoning_tokens=event.reasoning_tokens,
            usage_estimated=event.usage_estimated,
            latency=event.latency,
            cost=event.cost,
            finished_at=timezone.now(),
            **self._pace_of(event.key),
        )
        self._forget(event.key)
        self._turn_known(event.key, state=Turn.State.DONE, completion_tokens=event.completion_tokens)
        return self._turn_frame(Turn.objects.get(debate_id=self.debate_id, key=event.key), self._bump(**self._totals()))

    def _turn_frame(self, turn: Turn, debate: Debate | None, *, new: bool = False, section: int | None = None):
        """The turn's article and the stage, drawn after the commit. The turn is given the debate
        just read (its question: a speech's echo of it is not shown) instead of a query for it."""
        if debate is not None:
            turn.debate = debate
        return lambda: frames.turn(turn, new=new, section=section) + frames.status(debate, self._drawn())

    def _pace_of(self, key: str) -> dict:
        """When the ended turn's text arrived (the flusher kept it in memory, a point per write):
        written once, with the turn's end (a crash loses only an attempt that is run again)."""
        pace = self.paces.get(key)
        return {"pace": pace.points} if pace is not None else {}

    def _forget(self, key: str) -> None:
        """A turn that ended: nothing of it streams any more."""
        for running in (self.texts, self.counts, self.thoughts, self.thinking_counts, self.paces):
            running.pop(key, None)

    def _on_TurnFailed(self, event: ev.TurnFailed) -> str:  # noqa: N802
        Turn.objects.filter(debate_id=self.debate_id, key=event.key).update(
            text=storable(event.partial_text),
            thinking=storable(event.partial_thinking or self.thoughts.get(event.key, "")),
            reasoning_tokens=estimate_tokens(event.partial_thinking),  # as the engine charged it
            state=self._failed_state(event),
            error=event.error,
            prompt_tokens=event.prompt_tokens,
            completion_tokens=event.completion_tokens,
            usage_estimated=True,
            cost=event.cost,
            finished_at=timezone.now(),
            **self._pace_of(event.key),
        )
        self._forget(event.key)
        self._turn_known(event.key, state=self._failed_state(event), completion_tokens=event.completion_tokens)
        return self._turn_frame(Turn.objects.get(debate_id=self.debate_id, key=event.key), self._bump(**self._totals()))

    @staticmethod
    def _failed_state(event: ev.TurnFailed) -> str:
        return Turn.State.INTERRUPTED if event.error == "stopped" else Turn.State.FAILED

    def _totals(self) -> dict:
        """Every call paid for: each turn's last attempt plus the earlier attempts in its history,
        in tokens and in money (unknown where a model's price is)."""
        prompt = completion = reasoning = 0
        money, unknown, estimated = 0.0, False, False
        rows = Turn.objects.filter(debate_id=self.debate_id).values_list(
            "prompt_tokens", "completion_tokens", "usage_estimated", "history", "cost", "reasoning_tokens"
        )
        for p, c, est, history, cost, r in rows:
            prompt += p + sum(h.get("prompt_tokens", 0) for h in history)
            completion += c + sum(h.get("completion_tokens", 0) for h in history)
            reasoning += r + sum(h.get("reasoning_tokens", 0) for h in history)
            estimated = estimated or est or bool(history)
            attempts = [
                (p + c, cost),
                *((h.get("prompt_tokens", 0) + h.get("completion_tokens", 0), h.get("cost", 0.0)) for h in history),
            ]
            for tokens, paid in attempts:
                if paid is None and tokens:
                    unknown = True
                money += paid or 0.0
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "reasoning_tokens": reasoning,
            "tokens_estimated": estimated,
            "cost": round(money, 8),
            "cost_unknown": unknown,
        }

    def _on_Warning(self, event: ev.Warning) -> str:  # noqa: N802
        debate = Debate.objects.get(pk=self.debate_id)
        item = warning_dict(event)
        if any(w.get("code") == item["code"] and w.get("text") == item["text"] for w in debate.warnings):
            return ""  # a resumed run repeats warnings it already gave
        debate = self._bump(warnings=[*debate.warnings, item])
        return lambda: frames.warnings(debate)

    def _on_Plan(self, event: ev.Plan) -> str:  # noqa: N802
        fields = {"rounds_planned": event.rounds} if event.rounds else {}
        if event.cap is not None:
            fields["token_cap"] = event.cap
        if not fields:
            return ""
        debate = self._bump(**fields)
        return lambda: frames.status(debate, self._drawn())

    def _on_Checkpoint(self, event: ev.Checkpoint) -> str:  # noqa: N802
        debate = self._bump(
            status=Status.WAITING, status_detail=str(event.prompt)[:500], status_text=as_text(event.prompt)
        )
        return lambda: frames.status(debate)

    def _on_AwaitingHuman(self, event: ev.AwaitingHuman) -> str:  # noqa: N802
        """A person's turn: what to write, by when, and who may (the seat's person, once at the
        table: an invitee who has not accepted yet is named, not identified). A seat whose person
        left since the run started is due at once: the deadline watch hands its turn on."""
        seats = Seat.objects.filter(debate_id=self.debate_id, persona__slug=event.speaker)
        seat = seats.select_related("human").first()
        wait = 0 if seat and seat.vacated else settings.AGORA_HUMAN_DEADLINE
        deadline = timezone.now() + timedelta(seconds=wait)
        awaiting = {
            "key": event.key,
            "round": event.round,
            "phase": event.phase,
            "speaker": event.speaker,
            "speaker_name": event.speaker_name,
            "speaker_name_en": event.speaker_name_en,
            "parts": event.parts,
            "chars": event.chars,
            "prompt": event.prompt,
            "human": seat.human_id if seat and seat.present else None,
            "human_name": seat.person_name if seat else "",
            "stand_in": seat.stand_in if seat else "llm",
            "deadline_at": deadline.isoformat(),
        }
        debate = self._bump(awaiting=awaiting, status=Status.WAITING, status_detail="", status_text={})
        return lambda: frames.status(debate)

    def _on_Report(self, event: ev.Report) -> str:  # noqa: N802
        report, _ = Report.objects.update_or_create(
            debate_id=self.debate_id,
            defaults={
                "verdict_markdown": event.verdict_markdown,
                "transcript_markdown": event.transcript_markdown,
                "data": event.data,
            },
        )
        fields = {"token_cap": event.data.get("ledger", {}).get("cap")}
        if event.data.get("topic_slug"):
            fields["topic_slug"] = event.data["topic_slug"][:120]
        debate = self._bump(**fields)
        return lambda: frames.report(debate, report)

    def _on_Finished(self, event: ev.Finished) -> str:  # noqa: N802
        return ""
