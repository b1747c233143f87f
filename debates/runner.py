"""Run one debate to its end (or a checkpoint, or a failure): `execute`, on an event loop.

Every debate reaches this module through the Tasks API (`debates.tasks.run_debate_task`): in the
web process by default (`debates.task_backends.InProcessBackend`), in `manage.py agora_worker`
processes with `AGORA_RUNNER=worker`. Either way the debate's coroutine runs on one long-lived
event loop of the process (`DebateLoop`): the ASGI server's own loop in a web process, next to the
consumers that watch it, or the worker's shared loop; a private loop thread otherwise (the CLI,
tests). The rows become the engine's spec in `debates.specs`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from concurrent.futures import Future

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from agora.logs import debate_context
from debates import audience, clients, leases, search_clients
from debates.engine import events as ev
from debates.engine.budget import Ledger
from debates.engine.debate import run_debate
from debates.models import ACTIVE_STATUSES, Debate, Status, Turn
from debates.sink import DjangoSink, attempt_record
from debates.specs import debate_spec

log = logging.getLogger(__name__)

# -- running ------------------------------------------------------------------------------------


def _prepare(debate_id: int):
    debate = Debate.objects.get(pk=debate_id)
    # Turns left "running" by a crash or a stop are regenerated; their text moves to history then.
    debate.turns.filter(state=Turn.State.RUNNING).update(state=Turn.State.INTERRUPTED)
    # `stop_requested` is cleared only by admission (a new start): set now, the user stopped the
    # debate after it was started and before this runner got to it.
    if debate.stop_requested:
        return None, None, None, None, STOPPED_BEFORE_START
    try:
        search, problem = search_clients.client_for(debate), ""
    except search_clients.SearchMisconfigured as error:
        search, problem = None, str(error)
    spec = debate_spec(debate)
    spec.floor = audience.FloorSource(debate_id)  # the audience's questions taken into it (#30)
    return spec, clients.clients_for(debate), earlier_attempts(debate), search, problem


STOPPED_BEFORE_START = object()


def _mark_stopped(debate_id: int, runner_id: str) -> None:
    """A run stopped before its engine started: the debate is stopped (its slot free), if this
    runner still holds it."""
    Debate.objects.filter(pk=debate_id, runner_id=runner_id, status__in=ACTIVE_STATUSES).update(
        status=Status.STOPPED, status_detail="", finished_at=timezone.now()
    )


def _stopped_while_claiming(debate_id: int, runner_id: str) -> None:
    """Stop cancelled this run while its claim was on the database thread: the claim may have gone
    through or not, and Stop left the marking to this run either way (it runs in this process).
    Unless another runner holds it (that one's heartbeat sees the request), the debate is stopped
    and its lease let go, rather than left queued with its slot taken."""
    Debate.objects.filter(
        pk=debate_id, stop_requested=True, status__in=ACTIVE_STATUSES, runner_id__in=(runner_id, "", leases.QUEUED)
    ).update(status=Status.STOPPED, status_detail="", finished_at=timezone.now(), runner_id="", heartbeat_at=None)


def earlier_attempts(debate: Debate) -> Ledger:
    """A resumed run's ledger starts with what earlier runs paid for and did not keep: attempts in
    the turns' histories and the failed or interrupted attempts about to be regenerated."""
    ledger = Ledger()
    prompt = completion = 0
    cost = 0.0  # what they cost counts against the money budget too
    for turn in debate.turns.all():
        attempts = list(turn.history)
        if turn.state in (Turn.State.FAILED, Turn.State.INTERRUPTED):
            attempts.append(attempt_record(turn))
        prompt += sum(a.get("prompt_tokens", 0) for a in attempts)
        completion += sum(a.get("completion_tokens", 0) for a in attempts)
        cost += sum(a.get("cost") or 0.0 for a in attempts)  # an unknown price counts at nothing
    if prompt or completion:
        ledger.charge("earlier-attempts", prompt, completion, estimated=True, cost=cost)
    return ledger


async def execute(
    debate_id: int, *, echo: ev.Sink | None = None, frame_interval: float | None = None, force: bool = False
) -> str:
    """Run (or resume) one debate to its end, a checkpoint, or a failure. Safe to call again: it
    claims the debate first and returns "busy" if another live runner holds it."""
    me = leases.new_runner_id()
    with debate_context(debate_id, me):  # every line logged on the run's behalf names it
        return await _execute(debate_id, me, echo, frame_interval, force)


async def _execute(debate_id: int, me: str, echo: ev.Sink | None, frame_interval: float | None, force: bool) -> str:
    try:
        claimed = await database_sync_to_async(leases.claim)(debate_id, me, force=force)
    except asyncio.CancelledError:  # Stop while claiming: whether or not the claim went through
        await database_sync_to_async(_stopped_while_claiming)(debate_id, me)
        raise
    if not claimed:
        log.info("debate %s is held by another runner", debate_id)
        return "busy"
    extra = {"frame_interval": frame_interval} if frame_interval else {}
    sink = DjangoSink(debate_id, runner_id=me, echo=echo, **extra)
    pool = search = engine = None
    try:
        spec, pool, ledger, search, problem = await database_sync_to_async(_prepare)(debate_id)
        await sink.open()
        if problem is STOPPED_BEFORE_START:
            log.info("debate %s was stopped before it started; not running it", debate_id)
            await sink.emit(ev.Status("stopped"))
            return "stopped"
        if problem:  # a search provider that cannot work: say what to set before anything runs
            await sink.emit(ev.Status("failed", problem))
            return "failed"
        engine = asyncio.ensure_future(run_debate(spec, pool, sink, ledger, search))
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
    except asyncio.CancelledError:
        if engine is None:  # stopped while getting ready: nothing else would mark it
            await database_sync_to_async(_mark_stopped)(debate_id, me)
        raise
    except Exception as error:  # an engine bug must still leave the debate failed, not "running"
        log.exception("debate %s crashed", debate_id)
        await sink.emit(ev.Status("failed", f"internal error: {type(error).__name__}: {error}"))
        return "failed"
    finally:
        await sink.close()
        await clients.close(pool)
        if search is not None:
            await search.aclose()
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


class DebateLoop:
    """The event loop this process runs debates on, and the debates running there (so Stop in this
    process can cancel one at once)."""

    def __init__(self) -> None:
        self.server_loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.tasks: dict[int, asyncio.Task] = {}
        self.stopping: set[int] = set()  # debates whose task this process cancelled for Stop

    def loop(self) -> asyncio.AbstractEventLoop:
        if self.server_loop and self.server_loop.is_running():
            return self.server_loop
        with self._lock:
            if self._own_loop is None:
                self._own_loop = asyncio.new_event_loop()
                threading.Thread(target=self._own_loop.run_forever, name="agora-runner", daemon=True).start()
            return self._own_loop

    def submit(self, debate_id: int, *, force: bool = False) -> Future:
        """Schedule `execute(debate_id)` on the loop; the future holds its outcome."""

        async def tracked():
            self.tasks[debate_id] = asyncio.current_task()
            try:
                return await execute(debate_id, force=force)
            except asyncio.CancelledError:
                if debate_id not in self.stopping:
                    raise  # not ours (the loop shutting down)
                # Stop is an ordinary outcome, not an error: no traceback, no failed task.
                log.info("debate %s stopped", debate_id)
                return "stopped"
            except Exception:
                log.exception("debate %s could not run", debate_id)
                raise
            finally:
                self.stopping.discard(debate_id)
                self.tasks.pop(debate_id, None)

        # A fresh context: the task must not inherit the calling request's asgiref executor,
        # which quits when the response is sent.
        return contextvars.Context().run(asyncio.run_coroutine_threadsafe, tracked(), self.loop())

    def run_to_end(self, debate_id: int, *, force: bool = False) -> str:
        """Block the calling thread (a task's) until the debate's run ends; its outcome."""
        return self.submit(debate_id, force=force).result()

    def cancel(self, debate_id: int) -> bool:
        """Stop the debate's run in this process (Stop): true if it runs here."""
        task = self.tasks.get(debate_id)
        if task is None:
            return False
        self.stopping.add(debate_id)
        task.get_loop().call_soon_threadsafe(task.cancel)
        return True


debate_loop = DebateLoop()


class ServerLoopMiddleware:
    """Remembers the ASGI server's event loop so debates started from (sync) views run on it,
    next to the consumers that watch them (the in-memory channel layer is bound to one loop)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if debate_loop.server_loop is None:
            debate_loop.server_loop = asyncio.get_running_loop()
        return await self.app(scope, receive, send)
