"""What a format's `run` is given, and how it runs turns.

`DebateContext` holds one run of a debate: its spec, its clients (`ClientPool`), the sink its
events go to, the ledger its turns are charged to, the evidence pack and the research client, the
warnings and the results so far. A format builds `TurnPlan`s (`debates.engine.turns`,
`debates.engine.plans`) and hands them to `turn` (one) or `parallel` (a round whose turns are
independent). A turn that finished in an earlier run is replayed, not re-called, which is what
makes a debate resumable at turn level; any other is admitted (its slot on the client, the cap),
streamed (each delta to the sink) and settled (charged, summarised, reported).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from debates.engine import events as ev
from debates.engine.budget import Ledger, money
from debates.engine.evidence import pack_from_options
from debates.engine.i18n import Text, gettext_noop, verbatim
from debates.engine.i18n import text as message_text
from debates.engine.prompts import without_echoed_headings, without_heading_hints, without_length_hints
from debates.engine.repetition import Repetition, RepetitionGuard
from debates.engine.spec import CompletedTurn, DebateSpec, PersonaSpec
from debates.engine.text import CAPPED_MARK, REPEATED_MARK, summary_of, whole_sentences, without_own_name
from debates.engine.turns import (
    AwaitingHuman,
    CapReached,
    ClientPool,
    DebateAborted,
    ReplyMeter,
    TurnPlan,
    TurnResult,
    cut_slack,
    reply_ceiling,
    turn_label,
)
from debates.providers.base import (
    Completion,
    LLMClient,
    ProviderError,
    ThinkingLooped,
    estimate_messages_tokens,
    estimate_tokens,
)

if TYPE_CHECKING:
    from debates.search.base import SearchClient

# A reserved turn (a verdict) the cap has not room enough for is asked for a shorter reply, down
# to this many tokens; below it, it does not start either.
MIN_RESERVED_REPLY = 64
# A server that counts a prompt higher than our estimate (`estimate_messages_tokens`) teaches the
# ratio, times this slack, to every later booking of the run.
PROMPT_SLACK = 1.05

log = logging.getLogger(__name__)


class FormatShape(Protocol):
    """What a run reads of its format (a `debates.engine.format.Format`, whose `run` takes this
    module's context, so the format imports this module and not the other way round)."""

    tokens: Mapping[str, int]  # max_tokens by kind of turn ("speech", "host", …)
    parallel_phases: frozenset[str]  # phases whose turns run at once
    summary_limit: int
    phase_titles: Mapping[str, str]


@dataclass(frozen=True)
class Reply:
    """A streamed reply: its text as read, the server's account of it, and whether it was cut at
    its ceiling (about `ceiling` tokens)."""

    text: str
    completion: Completion
    capped: bool
    ceiling: int
    thinking: str = ""  # shown apart, kept apart: never part of `text`
    repetition: Repetition | None = None  # the reply looped and was cut there (`text` is what is kept)
    read: str = ""  # all that streamed, when more than `text` (a cut repetition)
    cut_short: bool = False  # read up to the turn's `cut_at` (and its slack) and closed there


class DebateContext:
    def __init__(
        self,
        spec: DebateSpec,
        fmt: FormatShape,
        clients: ClientPool,
        sink: ev.Sink,
        ledger: Ledger | None = None,
        research: SearchClient | None = None,
    ):
        self.spec = spec
        self.format = fmt
        self.clients = clients
        self.sink = sink
        self.ledger = ledger or Ledger()
        self.warnings: list[ev.Warning] = []
        self.results: dict[str, TurnResult] = {}
        self.order: list[str] = []  # turn keys in plan order (parallel turns finish in any order)
        # The evidence every turn's task decorator carries: the user's material and documents,
        # then whatever the format adds on the way (research, the roundtable checkpoint's facts).
        self.evidence = pack_from_options(spec.options.evidence, spec.options.documents)
        self.research = research  # a search client, or None: research is skipped
        self.translate = spec.translate
        # A turn's prompt is booked at its estimate times this; raised whenever a server counts a
        # prompt higher than estimated (the first turns under the cap teach it to the later ones).
        self.prompt_margin = 1.0
        # The audience's questions taken so far, read at each phase's start (`spec.floor`).
        self.floor: list[str] = []

    @property
    def facts(self) -> str:
        """The evidence pack as a prompt shows it ("" when there is none)."""
        return self.evidence.prompt_text(self.spec.question)

    def facts_for(self, round_no: int) -> str:
        """The pack as round `round_no` may see it (a role's own search is public from the next);
        round 0, the host's turns outside the rounds, sees all of it."""
        return self.evidence.prompt_text(self.spec.question, round_no=round_no or None)

    @property
    def lang(self) -> str:
        """ "zh" or "en": the debate's language (the question's); prompts and forms follow it."""
        return self.spec.language

    @property
    def options(self):
        return self.spec.options

    @property
    def library(self):
        return self.spec.library

    def max_tokens(self, kind: str) -> int:
        return self.spec.options.max_tokens.get(kind, self.format.tokens[kind])

    def seat_client(self, slug: str) -> str | None:
        return next((seat.client for seat in self.spec.seats if seat.persona.slug == slug), None)

    async def emit(self, event: ev.Event) -> None:
        await self.sink.emit(event)

    async def warn(self, code: str, msgid: str, **params) -> None:
        """A warning for viewers and the report: an English msgid (`gettext_noop`) and its values.
        A persona among the values goes in as its name in every language (`i18n.named`), so each
        reader reads the name they know it by."""
        params = {k: v.named(self.lang) if isinstance(v, PersonaSpec) else v for k, v in params.items()}
        warning = ev.Warning(code, Text(msgid, params))
        self.warnings.append(warning)
        await self.emit(warning)

    async def phase(self, round_no: int, phase: str, msgid: str, *, note: str = "", **params) -> None:
        await self.read_floor()
        parallel = phase in self.format.parallel_phases
        await self.emit(ev.PhaseStarted(round_no, phase, Text(msgid, params), parallel=parallel, note=note))

    async def read_floor(self) -> None:
        """The audience's questions taken so far: from this phase on, every speaker's material. A
        source that fails leaves the material as it was (the debate goes on)."""
        if self.spec.floor is None:
            return
        try:
            self.floor = list(await self.spec.floor.taken())
        except Exception:  # noqa: BLE001 - the audience must never stop a debate
            log.exception("the questions from the floor could not be read")

    async def chair_takes_question(self) -> str | None:
        """The moderated chair's own pick between rounds (only where the owner let it)."""
        if self.spec.floor is None:
            return None
        try:
            return await self.spec.floor.chair_take()
        except Exception:  # noqa: BLE001
            log.exception("the chair could not take a question from the floor")
            return None

    async def plan(self, *, rounds: int | None = None, cap: int | None = None) -> None:
        """Say what the run will be (its rounds, its token cap) as soon as the format knows."""
        if cap is not None:
            self.ledger.cap = cap
        await self.emit(ev.Plan(rounds, cap))

    def transcript(self) -> list[TurnResult]:
        return [self.results[k] for k in self.order if k in self.results]

    def client_for(self, key: str | None) -> LLMClient:
        return self.clients.get(key)

    def is_human(self, slug: str) -> bool:
        """A person sits in this persona's seat."""
        return self.client_for(self.seat_client(slug)).awaits_human

    def prompt_allowance(self, messages) -> int:
        """A prompt's tokens as a booking counts them: the estimate, times what servers taught."""
        return math.ceil(estimate_messages_tokens(messages) * self.prompt_margin)

    def completion_limit(self, plan: TurnPlan) -> int:
        """The completion tokens `plan`'s call may be charged: the limit its request carries (a
        reasoning model's headroom included); 0 for a person's seat, whose words cost nothing."""
        limit = self.client_for(plan.client).completion_limit(plan.messages, plan.max_tokens, key=plan.key)
        return 0 if limit is None else limit

    def allowance(self, plan: TurnPlan) -> int:
        """All `plan` may spend: its prompt (as booked) and its completion limit. A token cap books
        this before the turn starts; 0 for a person's seat."""
        client = self.client_for(plan.client)
        if client.completion_limit(plan.messages, plan.max_tokens, key=plan.key) is None:
            return 0
        return self.prompt_allowance(plan.messages) + self.completion_limit(plan)

    @property
    def parallel_capacity(self) -> int:
        return min(client.concurrency for client in self.clients.all())

    async def turn(self, plan: TurnPlan) -> TurnResult:
        if plan.key not in self.order:
            self.order.append(plan.key)
        done = self.spec.completed.get(plan.key)
        if done is not None:
            return await self._replay(plan, done)
        return await self._call(plan)

    async def parallel(self, plans: list[TurnPlan]) -> list[TurnResult]:
        """Independent turns at once; the provider's limiter bounds how many really run.

        Every turn is allowed to finish (so its text is kept) before a failure stops the debate.
        Under a token cap the turns that start together are booked together, in plan order,
        before any of them spends (`_admitted`): those whose allowance does not fit do not start
        (`CapReached`, with the turns that ran), so a round that starts under the cap cannot end
        over it. Turns queued behind a one-at-a-time server are booked when they get their slot,
        after the turns before them have given back what they did not spend.
        """
        outcomes = await asyncio.gather(*(self.turn(p) for p in plans), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, CapReached):
                raise outcome
        done = [o for o in outcomes if not isinstance(o, BaseException)]
        if len(done) < len(outcomes):
            stop = next(o for o in outcomes if isinstance(o, CapReached))
            raise CapReached(stop.key, done, stop.label)
        return done

    def _cost(self, plan: TurnPlan, prompt_tokens: int, completion_tokens: int) -> float | None:
        return money(self.client_for(plan.client).price_for(plan.key), prompt_tokens, completion_tokens)

    async def _replay(self, plan: TurnPlan, done: CompletedTurn) -> TurnResult:
        self.ledger.charge(
            plan.key,
            done.prompt_tokens,
            done.completion_tokens,
            exempt=plan.exempt_from_cap,
            cost=self._cost(plan, done.prompt_tokens, done.completion_tokens),
            reasoning=done.reasoning_tokens,
        )
        result = TurnResult(
            plan.key,
            plan.speaker,
            plan.round,
            plan.phase,
            done.text,
            done.summary,
            dict(done.data),
            done.prompt_tokens,
            done.completion_tokens,
            replayed=True,
        )
        self.results[plan.key] = result
        await self.emit(
            ev.TurnFinished(
                plan.key,
                done.text,
                done.summary,
                done.prompt_tokens,
                done.completion_tokens,
                data=dict(done.data),
                replayed=True,
            )
        )
        return result

    async def _call(self, plan: TurnPlan) -> TurnResult:
        """A turn not run before: admitted, streamed, settled."""
        client = self.client_for(plan.client)
        try:
            async with self._admitted(plan, client):
                started = time.monotonic()
                reply = await self._stream(plan, client)
                latency = time.monotonic() - started
            # The booking ends with the charge (in `_settle`, or `_fail`): never before, so no
            # other turn can book what this one has spent but not yet been charged.
            return await self._settle(plan, reply, latency)
        finally:
            self.ledger.release(plan.key)  # a turn that ended uncharged (an error before its call)

    @contextlib.asynccontextmanager
    async def _admitted(self, plan: TurnPlan, client: LLMClient):
        """The turn's slot on its client, held while it streams. A person's seat not written yet
        stops the run (`AwaitingHuman`); a spent cap refuses the turn (`CapReached`), checked once
        the turn has its slot: turns queued behind a one-at-a-time server are checked when they
        would start, not when the round was planned. Admitted, the turn is announced."""
        if client.awaits_human and not client.answered(plan.key):
            self.order.remove(plan.key)
            raise AwaitingHuman(plan)
        async with client.limiter:
            if not plan.exempt_from_cap:
                await self._book(plan)
            await self.emit(
                ev.TurnStarted(
                    plan.key,
                    plan.round,
                    plan.phase,
                    plan.speaker.slug,
                    plan.speaker.name,
                    plan.messages,
                    model=client.describe_for(plan.key),
                    speaker_name_en=plan.speaker.name_en,
                )
            )
            yield

    async def _book(self, plan: TurnPlan) -> None:
        """Pay for the turn before it starts (see `Ledger.hold`): its whole allowance is booked,
        or it does not start (`CapReached`). A reserved turn (a verdict) draws on the reserve too,
        and when even that is short it is asked for a shorter reply that fits, down to
        `MIN_RESERVED_REPLY` tokens. The money budget, once spent, stops every turn but a reserved one."""
        ledger = self.ledger
        money_spent = ledger.money_cap is not None and ledger.money >= ledger.money_cap
        if not (money_spent and not plan.reserved):
            need = self.allowance(plan)
            if ledger.hold(plan.key, need, reserved=plan.reserved):
                return
            if plan.reserved and (fitted := self._fitted_reply(plan)):
                asked, plan.max_tokens = plan.max_tokens, fitted
                ledger.hold(plan.key, self.allowance(plan), reserved=True)
                await self.warn(
                    "reply_lowered",
                    gettext_noop(
                        "%(speaker)s: the token cap left room for a reply of %(tokens)d tokens, not %(asked)d: "
                        "it was asked for within them."
                    ),
                    speaker=plan.speaker,
                    tokens=fitted,
                    asked=asked,
                )
                return
        self.order.remove(plan.key)
        raise CapReached(plan.key, label=turn_label(plan.speaker.called(self.lang), plan.round))

    def _fitted_reply(self, plan: TurnPlan) -> int | None:
        """The longest reply allowance, below the plan's, whose booking fits the room the cap
        leaves a reserved turn; None when not even `MIN_RESERVED_REPLY` tokens do."""
        room = self.ledger.room(reserved=True)
        client = self.client_for(plan.client)
        if room is None:
            return None
        room -= self.prompt_allowance(plan.messages)

        def fits(tokens: int) -> bool:
            return (client.completion_limit(plan.messages, tokens, key=plan.key) or 0) <= room

        low, high = MIN_RESERVED_REPLY, plan.max_tokens - 1
        if high < low or not fits(low):
            return None
        while low < high:  # the limit grows with the allowance: the largest that fits
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits(middle) else (low, middle - 1)
        return low

    async def _stream(self, plan: TurnPlan, client: LLMClient) -> Reply:
        """The reply, each delta sent to the sink as it comes, within the reply ceiling and the
        turn's deadline. A failure (the deadline, the provider, a stop) is recorded with the text
        so far (`_fail`) and ends the debate (`DebateAborted`) or goes on up (a stop)."""
        relay = ThinkingRelay(plan.key, self.emit)
        stream = client.stream(
            plan.messages,
            max_tokens=plan.max_tokens,
            stop=plan.stop or None,
            temperature=self.spec.options.temperature,
            extra=plan.extra,
            key=plan.key,
            on_thinking=relay,
        )
        parts: list[str] = []
        meter = ReplyMeter(reply_ceiling(plan.max_tokens))
        guard = RepetitionGuard()  # a reply that loops is cut where it starts to (`debates.engine.repetition`)
        capped = cut_short = False
        stop_at = plan.cut_at + cut_slack(plan.cut_at) if plan.cut_at else 0
        try:
            # A deadline for the whole turn: a server that keeps the connection busy without
            # ever finishing (empty chunks every second) never trips the silence timeout.
            async with asyncio.timeout(self.spec.turn_deadline):
                async for delta in stream:
                    parts.append(delta)
                    await self.emit(ev.TextDelta(plan.key, delta))
                    if meter.add(delta):
                        capped = True  # a server ignoring max_tokens: stop reading, keep the text
                        break
                    if guard.add(delta):
                        break
                    if stop_at and meter.chars > stop_at:
                        cut_short = True  # the moderator cuts in: the rest would be cut anyway
                        break
        except TimeoutError:
            await _close(stream)
            relay.cancel()
            reason = message_text(
                gettext_noop(
                    "the turn ran past its deadline of %(seconds)s s (AGORA_TURN_DEADLINE) without finishing; "
                    "its text so far is kept. Retry the turn, or raise the deadline"
                ),
                seconds=f"{self.spec.turn_deadline:g}",
            )
            await self._fail(plan, "".join(parts), reason, relay.text)
            failed = message_text("%(speaker)s: %(error)s", speaker=plan.speaker.named(self.lang), error=reason)
            raise DebateAborted(failed) from None
        except ProviderError as error:
            relay.cancel()
            thinking = relay.text or getattr(error, "partial_thinking", "")
            await self._fail(plan, "".join(parts) or error.partial_text, str(error), thinking)
            message = message_text(
                "%(speaker)s: %(error)s", speaker=plan.speaker.named(self.lang), error=verbatim(str(error))
            )
            raise DebateAborted(message) from error
        except asyncio.CancelledError:
            relay.cancel()
            await self._fail(plan, "".join(parts), "stopped", relay.text)
            raise
        if capped or guard.found or cut_short:
            await _close(stream)
        await relay.drain()  # every piece of thinking shown before the turn is settled
        thinking = stream.completion.thinking or relay.text
        if guard.found:
            found, read = guard.found, "".join(parts)
            return Reply(found.kept, stream.completion, False, meter.ceiling, thinking, found, read)
        return Reply("".join(parts), stream.completion, capped, meter.ceiling, thinking, cut_short=cut_short)

    async def _settle(self, plan: TurnPlan, reply: Reply, latency: float) -> TurnResult:
        """The streamed reply made a turn: cut and marked when capped (its usage estimated, the
        server's being unknown), post-processed, summarised, charged to the ledger, reported."""
        completion = reply.completion
        if reply.capped or reply.repetition or reply.cut_short:
            # Cut before the server's account: the usage is estimated from what was read.
            streamed = reply.read or reply.text
            mark = REPEATED_MARK if reply.repetition else CAPPED_MARK if reply.capped else {}
            raw = reply.text + mark.get(self.lang, "")
            thinking = reply.thinking
            completion = Completion(
                raw,
                estimate_messages_tokens(plan.messages),
                estimate_tokens(streamed) + estimate_tokens(thinking),
                usage_estimated=True,
                thinking=thinking,
                reasoning_tokens=estimate_tokens(thinking),
            )
        else:
            raw = completion.text or reply.text
        # Before the format reads it (and counts its characters): the prompt's headings and the
        # speaker's own name copied at its start are not a part of the speech.
        raw = without_echoed_headings(raw, self.spec.question)
        raw = without_heading_hints(raw, "\n".join(m["content"] for m in plan.messages))
        raw = without_length_hints(raw)
        raw = without_own_name(raw, (plan.speaker.name, plan.speaker.name_en))
        text, data = plan.postprocess(raw) if plan.postprocess else (raw, {})
        if reply.capped:
            data = {**data, "reply_capped": True}
            await self.warn(
                "reply_capped",
                gettext_noop("%(speaker)s: the reply passed its ceiling (about %(tokens)d tokens) and was cut."),
                speaker=plan.speaker,
                tokens=reply.ceiling,
            )
        if reply.repetition:
            data = {**data, "repetition_cut": {"copies": reply.repetition.copies, "removed": reply.repetition.removed}}
            await self.warn(
                "repetition_cut",
                gettext_noop(
                    "%(speaker)s: cut, the model repeated itself (%(copies)d times); the repetition was removed "
                    "and the debate goes on."
                ),
                speaker=plan.speaker,
                copies=reply.repetition.copies,
            )
        # A turn with no summary (`summary_limit` 0: a measurement, a procedural classification) shows
        # none; a postprocess may name what the summary is (`data["summary"]`: a verdict's chosen option).
        given = data.pop("summary", None) if isinstance(data, dict) else None
        if plan.summary_limit <= 0:
            summary = ""
        elif given is not None:
            summary = whole_sentences(str(given), plan.summary_limit)
        else:
            summary = summary_of(text, plan.summary_limit, self.spec.question)
        # A prompt the server counted (not a turn outside the cap: the panel's baseline is its own measure).
        if not completion.usage_estimated and completion.prompt_tokens and not plan.exempt_from_cap:
            ratio = completion.prompt_tokens / max(1, estimate_messages_tokens(plan.messages))
            self.prompt_margin = max(self.prompt_margin, round(ratio * PROMPT_SLACK, 3))
        cost = self._cost(plan, completion.prompt_tokens, completion.completion_tokens)
        self.ledger.charge(
            plan.key,
            completion.prompt_tokens,
            completion.completion_tokens,
            estimated=completion.usage_estimated,
            exempt=plan.exempt_from_cap,
            cost=cost,
            reasoning=completion.reasoning_tokens or estimate_tokens(reply.thinking),
        )
        result = TurnResult(
            plan.key,
            plan.speaker,
            plan.round,
            plan.phase,
            text,
            summary,
            data,
            completion.prompt_tokens,
            completion.completion_tokens,
        )
        self.results[plan.key] = result
        await self.emit(
            ev.TurnFinished(
                plan.key,
                text,
                summary,
                completion.prompt_tokens,
                completion.completion_tokens,
                usage_estimated=completion.usage_estimated,
                latency=latency,
                data=data,
                cost=cost,
                thinking=reply.thinking,
                reasoning_tokens=completion.reasoning_tokens or estimate_tokens(reply.thinking),
            )
        )
        return result

    async def _fail(self, plan: TurnPlan, partial: str, reason: str, thinking: str = "") -> None:
        prompt_tokens = sum(estimate_tokens(m["content"]) for m in plan.messages)
        completion_tokens = estimate_tokens(partial) + estimate_tokens(thinking)  # thinking is output too
        cost = self._cost(plan, prompt_tokens, completion_tokens)
        self.ledger.charge(
            plan.key, prompt_tokens, completion_tokens, estimated=True, cost=cost, reasoning=estimate_tokens(thinking)
        )
        await self.emit(
            ev.TurnFailed(plan.key, reason, partial, prompt_tokens, completion_tokens, cost, partial_thinking=thinking)
        )


class ThinkingRelay:
    """A reply's thinking, from the client's synchronous `on_thinking` callback to the sink as
    `ThinkingDelta`s, in order. The callback may run many times before the reply's first answer
    delta gives the turn control back (a model thinking for a minute), so pieces queue here and
    one task at a time emits them; `drain` waits for the last. The thinking never joins the
    turn's text: the format reads only `Completion.text`."""

    def __init__(self, key: str, emit) -> None:
        self.key = key
        self._emit = emit
        self._parts: list[str] = []  # everything, for a failed turn's record
        self._queue: list[str] = []
        self._task: asyncio.Task | None = None
        # Thinking that goes round in a loop never reaches an answer: the call stops there.
        self._guard = RepetitionGuard()

    def __call__(self, piece: str) -> None:
        if not piece:
            return
        self._parts.append(piece)
        if self._guard.add(piece):
            found = self._guard.found
            raise ThinkingLooped(
                f"the model's thinking went round in a loop (one passage {found.copies} times) and was stopped "
                "there, before any answer; retry the turn, or choose a model (or a lower reasoning effort) "
                "that thinks less"
            )
        self._queue.append(piece)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send())

    async def _send(self) -> None:
        while self._queue:
            text = "".join(self._queue)
            self._queue.clear()
            await self._emit(ev.ThinkingDelta(self.key, text))

    async def drain(self) -> None:
        if self._task is not None and not self._task.done():
            await self._task
        await self._send()

    def cancel(self) -> None:
        """A failed or stopped turn: nothing more is shown live (its record keeps all of it)."""
        self._queue.clear()
        if self._task is not None:
            self._task.cancel()

    @property
    def text(self) -> str:
        return "".join(self._parts)


async def _close(stream) -> None:
    """Stop reading a reply early: closing the generator closes its HTTP response."""
    close = getattr(stream.deltas, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()
