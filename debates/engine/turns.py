"""Running turns: one fresh LLM call each, streamed to the sink, charged to the ledger.

Every format builds `TurnPlan`s and hands them to `DebateContext.turn` (one) or `.parallel` (a
round whose turns are independent). Finished turns from an earlier run are replayed, not re-called,
which is what makes a debate resumable at turn level.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from debates.engine import events as ev
from debates.engine.budget import Ledger, money
from debates.engine.evidence import pack_from_options
from debates.engine.i18n import Text, gettext_noop, verbatim
from debates.engine.i18n import text as message_text
from debates.engine.spec import CompletedTurn, DebateSpec, PersonaSpec
from debates.engine.text import summary_of
from debates.providers.base import (
    Completion,
    LLMClient,
    Message,
    ProviderError,
    estimate_messages_tokens,
    estimate_tokens,
)

if TYPE_CHECKING:
    from debates.engine.format import Format
    from debates.engine.structure import Form
    from debates.search.base import SearchClient

# (text) -> (text to keep, parsed data). Runs after streaming: may cut, must not raise.
PostProcess = Callable[[str], tuple[str, dict[str, Any]]]
CAPPED_MARK = "……【回复超出上限，已截断 reply cut at its ceiling】"


def reply_ceiling(max_tokens: int) -> int:
    """Estimated tokens past which a reply is cut whatever the server does with max_tokens. Twice
    the request, because the estimate counts a CJK character as a token where real tokenizers often
    pack two: a server that honours max_tokens never reaches it."""
    return 2 * max_tokens + 32


class ReplyMeter:
    """Counts a streaming reply's estimated tokens (as `estimate_tokens` would for the whole
    text, without re-reading it per delta)."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.cjk = self.other = 0

    def add(self, delta: str) -> bool:
        """Count `delta`; true once the reply is past its ceiling."""
        cjk = sum(1 for ch in delta if "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
        self.cjk += cjk
        self.other += len(delta) - cjk
        return self.cjk + (self.other + 3) // 4 > self.ceiling


class DebateAborted(Exception):
    """The debate cannot go on: a turn failed, or a rule refuses the input. The message is for
    users: a `Text` (translated where it is shown), or a plain string shown as it is."""

    def __init__(self, message: str, *, outcome: str = "failed"):
        super().__init__(message)
        self.text = message if isinstance(message, Text) else verbatim(message)
        self.outcome = outcome


class AwaitingHuman(Exception):
    """A person's turn has come and they have not written it: the run stops here and waits, in the
    database, until they do (or the deadline hands the seat to a model, or passes it)."""

    def __init__(self, plan: TurnPlan):
        super().__init__(plan.key)
        self.plan = plan


class CapReached(Exception):
    """A turn was not started: the token cap has no room left for it. `done` holds the turns of
    the same parallel round that did run."""

    def __init__(self, key: str, done: list[TurnResult] | None = None):
        super().__init__(key)
        self.key = key
        self.done = done or []


@dataclass
class TurnPlan:
    key: str
    round: int
    phase: str
    speaker: PersonaSpec
    messages: list[Message]
    max_tokens: int
    summary_limit: int = 80
    stop: list[str] = field(default_factory=list)
    client: str | None = None
    postprocess: PostProcess | None = None
    exempt_from_cap: bool = False
    reserved: bool = False  # runs even when the cap is spent (a verdict: the report needs it)
    extra: dict[str, Any] | None = None  # request-body additions (a local server's grammar)
    form: Form | None = None  # the labelled parts asked for (a person's composer shows them)
    chars: int = 0  # without a form: the speech's limit in characters (a person's composer keeps to it)


@dataclass
class TurnResult:
    key: str
    speaker: PersonaSpec
    round: int
    phase: str
    text: str
    summary: str
    data: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replayed: bool = False


class ClientPool:
    """The LLM clients of one debate: a default and any per-seat overrides by key."""

    def __init__(self, default: LLMClient, others: Mapping[str, LLMClient] | None = None):
        self.default = default
        self.others = dict(others or {})

    def get(self, key: str | None) -> LLMClient:
        return self.others.get(key, self.default) if key else self.default

    def all(self) -> list[LLMClient]:
        return [self.default, *self.others.values()]


class DebateContext:
    def __init__(
        self,
        spec: DebateSpec,
        fmt: Format,
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

    @property
    def facts(self) -> str:
        """The evidence pack as a prompt shows it ("" when there is none)."""
        return self.evidence.prompt_text(self.spec.question)

    def facts_for(self, round_no: int) -> str:
        """The pack as round `round_no` may see it (a role's own search is public from the next);
        round 0, the host's turns outside the rounds, sees all of it."""
        return self.evidence.prompt_text(self.spec.question, round_no=round_no or None)

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
        """A warning for viewers and the report: an English msgid (`gettext_noop`) and its values."""
        warning = ev.Warning(code, Text(msgid, params))
        self.warnings.append(warning)
        await self.emit(warning)

    async def phase(self, round_no: int, phase: str, msgid: str, *, note: str = "", **params) -> None:
        parallel = phase in self.format.parallel_phases
        await self.emit(ev.PhaseStarted(round_no, phase, Text(msgid, params), parallel=parallel, note=note))

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
        """
        outcomes = await asyncio.gather(*(self.turn(p) for p in plans), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, CapReached):
                raise outcome
        done = [o for o in outcomes if not isinstance(o, BaseException)]
        if len(done) < len(outcomes):
            raise CapReached(next(o.key for o in outcomes if isinstance(o, CapReached)), done)
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
        client = self.client_for(plan.client)
        if client.awaits_human and not client.answered(plan.key):
            self.order.remove(plan.key)
            raise AwaitingHuman(plan)
        async with client.limiter:
            # Checked once the turn has its slot: turns queued behind a one-at-a-time server are
            # checked when they would start, not when the round was planned.
            if self.ledger.spent_for_rounds and not (plan.exempt_from_cap or plan.reserved):
                self.order.remove(plan.key)
                raise CapReached(plan.key)
            await self.emit(
                ev.TurnStarted(
                    plan.key,
                    plan.round,
                    plan.phase,
                    plan.speaker.slug,
                    plan.speaker.name,
                    plan.messages,
                    model=client.describe_for(plan.key),
                )
            )
            started = time.monotonic()
            stream = client.stream(
                plan.messages,
                max_tokens=plan.max_tokens,
                stop=plan.stop or None,
                temperature=self.spec.options.temperature,
                extra=plan.extra,
                key=plan.key,
            )
            parts: list[str] = []
            meter = ReplyMeter(reply_ceiling(plan.max_tokens))
            capped = False
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
            except TimeoutError:
                await _close(stream)
                reason = message_text(
                    gettext_noop(
                        "the turn ran past its deadline of %(seconds)s s (AGORA_TURN_DEADLINE) without finishing; "
                        "its text so far is kept. Retry the turn, or raise the deadline"
                    ),
                    seconds=f"{self.spec.turn_deadline:g}",
                )
                await self._fail(plan, "".join(parts), reason)
                failed = message_text("%(speaker)s: %(error)s", speaker=plan.speaker.name, error=reason)
                raise DebateAborted(failed) from None
            except ProviderError as error:
                await self._fail(plan, "".join(parts) or error.partial_text, str(error))
                message = message_text("%(speaker)s: %(error)s", speaker=plan.speaker.name, error=verbatim(str(error)))
                raise DebateAborted(message) from error
            except asyncio.CancelledError:
                await self._fail(plan, "".join(parts), "stopped")
                raise
            if capped:
                await _close(stream)
            latency = time.monotonic() - started
        completion = stream.completion
        if capped:
            raw = "".join(parts) + CAPPED_MARK
            completion = Completion(
                raw,
                estimate_messages_tokens(plan.messages),
                estimate_tokens("".join(parts)),
                usage_estimated=True,
            )
        else:
            raw = completion.text or "".join(parts)
        text, data = plan.postprocess(raw) if plan.postprocess else (raw, {})
        if capped:
            data = {**data, "reply_capped": True}
            await self.warn(
                "reply_capped",
                gettext_noop("%(speaker)s: the reply passed its ceiling (about %(tokens)d tokens) and was cut."),
                speaker=plan.speaker.name,
                tokens=meter.ceiling,
            )
        summary = summary_of(text, plan.summary_limit, self.spec.question)
        cost = self._cost(plan, completion.prompt_tokens, completion.completion_tokens)
        self.ledger.charge(
            plan.key,
            completion.prompt_tokens,
            completion.completion_tokens,
            estimated=completion.usage_estimated,
            exempt=plan.exempt_from_cap,
            cost=cost,
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
            )
        )
        return result

    async def _fail(self, plan: TurnPlan, partial: str, reason: str) -> None:
        prompt_tokens = sum(estimate_tokens(m["content"]) for m in plan.messages)
        completion_tokens = estimate_tokens(partial)
        cost = self._cost(plan, prompt_tokens, completion_tokens)
        self.ledger.charge(plan.key, prompt_tokens, completion_tokens, estimated=True, cost=cost)
        await self.emit(ev.TurnFailed(plan.key, reason, partial, prompt_tokens, completion_tokens, cost))


async def _close(stream) -> None:
    """Stop reading a reply early: closing the generator closes its HTTP response."""
    close = getattr(stream.deltas, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()
