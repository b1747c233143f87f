"""Start, stop and resume debates. The only place that turns ORM rows into the engine's spec.

By default a debate runs inside the web server's own event loop (no extra service): `start`
schedules `execute(debate_id)` there. `execute` is also what a separate worker would call, so
moving the job out of process touches neither views nor engine.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction

from debates import clients, leases, running_limit
from debates.engine import events as ev
from debates.engine import run_debate
from debates.engine.budget import Ledger
from debates.engine.spec import (
    CompletedTurn,
    CritiqueSpec,
    DebateSpec,
    DomainTemplateSpec,
    Options,
    PairingRuleSpec,
    PersonaSpec,
    SeatSpec,
)
from debates.models import ACTIVE_STATUSES, Debate, Status, Turn
from debates.sink import DjangoSink, attempt_record
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona

log = logging.getLogger(__name__)

# -- rows → spec ---------------------------------------------------------------------------------


def persona_spec(p: Persona) -> PersonaSpec:
    return PersonaSpec(
        slug=p.slug,
        name=p.name,
        kind=p.kind,
        tier=p.tier,
        role=p.role,
        tradition=p.tradition,
        keywords=tuple(p.keywords),
        description=p.description,
        text=p.persona_text(),
        veto_right=p.veto_right,
        schema_type=p.schema_type,
        density_score=p.density_score,
    )


def options_from(data: dict) -> Options:
    known = set(Options.__dataclass_fields__)
    return Options(**{k: v for k, v in data.items() if k in known})


def build_spec(debate: Debate) -> DebateSpec:
    libraries = Library.objects.filter(format=debate.format)
    pool_rows = list(Persona.objects.filter(library__in=libraries))
    seats = list(debate.seats.select_related("persona__library", "provider"))
    seated = [s.persona for s in seats]
    everyone = {p.pk: p for p in [*pool_rows, *seated]}
    slugs = [p.slug for p in everyone.values()]
    critiques = CrossCritique.objects.filter(source__slug__in=slugs, target__slug__in=slugs).select_related(
        "source", "target"
    )
    host_kind = {"panel": "host", "moderated": "moderator"}.get(debate.format)
    host = next((p for p in pool_rows if host_kind and p.kind == host_kind), None)
    # The protocol (rounds, limits) is the seated personas' library's, else the format's first.
    library = seated[0].library if seated else libraries.first()
    completed = {
        t.key: CompletedTurn(t.key, t.text, t.summary, t.prompt_tokens, t.completion_tokens, t.data)
        for t in debate.turns.filter(state=Turn.State.DONE)
    }
    return DebateSpec(
        question=debate.question,
        format=debate.format,
        seats=[SeatSpec(persona_spec(s.persona), s.position, clients.seat_key(s.provider, s.model)) for s in seats],
        options=options_from(debate.options),
        pool=[persona_spec(p) for p in everyone.values() if p.kind == "debater"],
        host=persona_spec(host) if host else None,
        critiques=[CritiqueSpec(c.source.slug, c.target.slug, c.point, c.citation) for c in critiques],
        pairing_rules=[
            PairingRuleSpec((r.persona_a.slug, r.persona_b.slug), tuple(r.keywords), r.default_rounds, r.label)
            for r in PairingRule.objects.filter(library__in=libraries).select_related("persona_a", "persona_b")
        ],
        domain_templates=[
            DomainTemplateSpec(t.slug, t.name, tuple(t.keywords), tuple(t.roles.values_list("slug", flat=True)))
            for t in DomainTemplate.objects.filter(library__in=libraries)
        ],
        protocol=dict(library.protocol) if library else {},
        completed=completed,
        checkpoint_reply=debate.checkpoint_reply,
        turn_deadline=settings.AGORA_TURN_DEADLINE,
    )


# -- running ------------------------------------------------------------------------------------


def _prepare(debate_id: int):
    debate = Debate.objects.get(pk=debate_id)
    # Turns left "running" by a crash or a stop are regenerated; their text moves to history then.
    debate.turns.filter(state=Turn.State.RUNNING).update(state=Turn.State.INTERRUPTED)
    Debate.objects.filter(pk=debate_id).update(stop_requested=False)
    return build_spec(debate), clients.clients_for(debate), earlier_attempts(debate)


def earlier_attempts(debate: Debate) -> Ledger:
    """A resumed run's ledger starts with what earlier runs paid for and did not keep: attempts in
    the turns' histories and the failed or interrupted attempts about to be regenerated."""
    ledger = Ledger()
    prompt = completion = 0
    for turn in debate.turns.all():
        attempts = list(turn.history)
        if turn.state in (Turn.State.FAILED, Turn.State.INTERRUPTED):
            attempts.append(attempt_record(turn))
        prompt += sum(a.get("prompt_tokens", 0) for a in attempts)
        completion += sum(a.get("completion_tokens", 0) for a in attempts)
    if prompt or completion:
        ledger.charge("earlier-attempts", prompt, completion, estimated=True)
    return ledger


async def execute(
    debate_id: int, *, echo: ev.Sink | None = None, frame_interval: float | None = None, force: bool = False
) -> str:
    """Run (or resume) one debate to its end, a checkpoint, or a failure. Safe to call again: it
    claims the debate first and returns "busy" if another live runner holds it."""
    me = leases.new_runner_id()
    if not await database_sync_to_async(leases.claim)(debate_id, me, force=force):
        log.info("debate %s is held by another runner", debate_id)
        return "busy"
    extra = {"frame_interval": frame_interval} if frame_interval else {}
    sink = DjangoSink(debate_id, runner_id=me, echo=echo, **extra)
    pool = None
    try:
        spec, pool, ledger = await database_sync_to_async(_prepare)(debate_id)
        await sink.open()
        engine = asyncio.ensure_future(run_debate(spec, pool, sink, ledger))
        sink.on_lease_lost = engine.cancel
        beat = asyncio.ensure_future(_heartbeat(debate_id, me, engine, sink))
        try:
            return await engine
        except asyncio.CancelledError:
            stopped_by_heartbeat = beat.done() and not beat.cancelled()
            if sink.lost or stopped_by_heartbeat:
                return "lost" if sink.lost else "stopped"
            raise  # the runner's own cancellation (the Stop button in this process)
        finally:
            beat.cancel()
    except Exception as error:  # an engine bug must still leave the debate failed, not "running"
        log.exception("debate %s crashed", debate_id)
        await sink.emit(ev.Status("failed", f"internal error: {type(error).__name__}: {error}"))
        return "failed"
    finally:
        await sink.close()
        await clients.close(pool)
        await database_sync_to_async(leases.release)(debate_id, me)


async def _heartbeat(debate_id: int, runner_id: str, engine: asyncio.Future, sink: DjangoSink) -> str:
    """Renew the lease; stop the engine when the user asked (a worker cannot be reached by the
    view that got the click) or when the lease was lost."""
    while not engine.done():
        await asyncio.sleep(settings.AGORA_HEARTBEAT)
        ours, stop = await database_sync_to_async(leases.renew)(debate_id, runner_id)
        if not ours:
            sink.lost = True
        if not ours or stop:
            engine.cancel()
            return "lost" if not ours else "stop"
    return "done"


class InProcessRunner:
    """Runs debates as tasks on the web server's event loop, or on a private loop thread when no
    server loop is known (the management command, tests with Django's test client)."""

    def __init__(self) -> None:
        self.server_loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.tasks: dict[int, asyncio.Task] = {}

    def loop(self) -> asyncio.AbstractEventLoop:
        if self.server_loop and self.server_loop.is_running():
            return self.server_loop
        with self._lock:
            if self._own_loop is None:
                self._own_loop = asyncio.new_event_loop()
                threading.Thread(target=self._own_loop.run_forever, name="agora-runner", daemon=True).start()
            return self._own_loop

    def start(self, debate_id: int, *, force: bool = False) -> Future:
        async def tracked():
            self.tasks[debate_id] = asyncio.current_task()
            try:
                return await execute(debate_id, force=force)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("debate %s could not run", debate_id)
                raise
            finally:
                self.tasks.pop(debate_id, None)

        # A fresh context: the task must not inherit the calling request's asgiref executor,
        # which quits when the response is sent.
        return contextvars.Context().run(asyncio.run_coroutine_threadsafe, tracked(), self.loop())

    def stop(self, debate_id: int) -> bool:
        task = self.tasks.get(debate_id)
        if task is None:
            return False
        task.get_loop().call_soon_threadsafe(task.cancel)
        return True

    async def resume_interrupted(self) -> list[int]:
        """At server start: debates a crash left active resume from their last finished turn."""
        ids = await database_sync_to_async(_interrupted_ids)()
        for debate_id in ids:
            if debate_id in self.tasks:
                continue
            log.info("resuming debate %s, interrupted by a restart", debate_id)
            # This process is the only runner in in-process mode: the old lease is a dead one's.
            self.start(debate_id, force=True)
        return ids

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Called once the ASGI server's loop is known: run here, and pick up interrupted work."""
        self.server_loop = loop
        loop.call_soon_threadsafe(lambda: loop.create_task(self.resume_interrupted()), context=contextvars.Context())


def _interrupted_ids() -> list[int]:
    return list(Debate.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", flat=True))


runner = InProcessRunner()


def attach_to_daphne() -> bool:
    """Daphne creates its event loop when imported, before it serves: hook our start-up onto it so
    interrupted debates resume even if no one visits. (With workers, their watchdogs do that.)"""
    server = sys.modules.get("daphne.server")
    loop = getattr(server, "twisted_loop", None)
    if loop is None or settings.AGORA_RUNNER != "inprocess":
        return False
    runner.attach(loop)
    return True


def start(debate: Debate, **changes) -> None:
    """Run a debate again (Resume, Retry turn, Continue at the checkpoint with `changes` such as
    the user's reply): admitted under its owner's running limit, then handed to its runner.
    Raises RunningLimitReached, changing nothing. Call it outside any transaction."""
    running_limit.admit(debate, **changes)
    dispatch(debate.pk)


def start_new(create: Callable[[], Debate]) -> Debate:
    """Create a debate with `create()` and admit it in the same transaction, so two requests of one
    owner cannot both pass the limit; then hand it to its runner."""
    with transaction.atomic():
        debate = create()
        running_limit.admit(debate)
    dispatch(debate.pk)
    return debate


def dispatch(debate_id: int) -> None:
    """Hand an admitted debate to whoever runs debates: here, or a worker through the Tasks API."""
    if settings.AGORA_RUNNER == "worker":
        from debates.tasks import run_debate_task

        run_debate_task.enqueue(debate_id)
    else:
        runner.start(debate_id)


def stop(debate: Debate) -> None:
    """Ask the debate's runner to stop. A worker elsewhere notices at its next heartbeat; a
    debate nobody holds (a crash left it active) is marked stopped here."""
    Debate.objects.filter(pk=debate.pk).update(stop_requested=True)
    if runner.stop(debate.pk):
        return
    debate.refresh_from_db()
    if not leases.is_held(debate):
        Debate.objects.filter(pk=debate.pk, status__in=ACTIVE_STATUSES).update(status=Status.STOPPED)


class ServerLoopMiddleware:
    """Remembers the ASGI server's event loop so debates started from (sync) views run on it,
    next to the consumers that watch them (the in-memory channel layer is bound to one loop)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if runner.server_loop is None:
            runner.server_loop = asyncio.get_running_loop()
        return await self.app(scope, receive, send)
