"""What the views (and the server at start-up) do to a debate's run: start it under its owner's
running limit, stop it, and pick up what a restart interrupted. Running itself goes through the
Tasks API (`debates.tasks`)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
from collections.abc import Callable
from datetime import datetime

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from debates import leases, running_limit, tasks
from debates.models import ACTIVE_STATUSES, Debate, Status
from debates.runner import debate_loop

log = logging.getLogger(__name__)


def dispatch(debate_id: int, *, force: bool = False) -> None:
    """Hand an admitted debate to the Tasks API's backend."""
    tasks.run_debate_task.enqueue(debate_id, force=force)


def start(debate: Debate, *, door: str, prepare: Callable[[], None] | None = None, **changes) -> None:
    """Run a debate again (Resume, Retry turn, Continue at the checkpoint with `changes` such as
    the user's reply, and `prepare` for other rows to change with them): admitted through `door`
    (`debates.admission`), then dispatched. Raises admission.Refused (RunningLimitReached),
    changing nothing. Call it outside any transaction."""
    with transaction.atomic():
        if prepare is not None:
            prepare()
        running_limit.admit(debate, door, **changes)
    dispatch(debate.pk)


def start_new(create: Callable[[], Debate], *, door: str) -> Debate:
    """Create a debate with `create()` and admit it through `door` in the same transaction, so two
    requests of one owner cannot both pass the limit; then dispatch it."""
    with transaction.atomic():
        debate = create()
        running_limit.admit(debate, door)
    dispatch(debate.pk)
    return debate


def stop(debate: Debate) -> None:
    """Stop the debate: at once when its runner is in this process or nobody runs it yet (a
    debate stopped right after Start is stopped, and its running slot free, before any runner
    claims it); a worker elsewhere notices at its next heartbeat. `stop_requested` stays set
    until the debate is started again, so a runner that claims it later (a task that was already
    on its way, a restart, a watchdog) marks it stopped instead of running it."""
    Debate.objects.filter(pk=debate.pk).update(stop_requested=True)
    if debate_loop.cancel(debate.pk):
        return
    debate.refresh_from_db()
    if not leases.is_held(debate):
        Debate.objects.filter(pk=debate.pk, status__in=ACTIVE_STATUSES).update(
            status=Status.STOPPED, status_detail="", finished_at=timezone.now()
        )


def _interrupted_ids() -> list[int]:
    return list(Debate.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", flat=True))


async def resume_interrupted() -> list[int]:
    """At server start (one process runs everything): debates a crash left active resume from their
    last finished turn. This process is their only runner, so the old lease is a dead one's. (A
    debate whose Stop came before the crash is marked stopped by its runner, never resumed;
    comparisons the crash interrupted are marked failed, which frees their owners' slots.)
    Where several processes run debates (`AGORA_PROCESSES` > 1) a live sibling may hold any of
    them: `watch_orphans` takes over only what nobody drives, and fails comparisons past their
    deadline (`comparisons.fail_overdue`)."""
    from debates import comparisons

    if settings.AGORA_PROCESSES > 1:
        return []
    await database_sync_to_async(comparisons.fail_interrupted)()
    ids = await database_sync_to_async(_interrupted_ids)()
    for debate_id in ids:
        log.info("resuming debate %s, interrupted by a restart", debate_id)
        await database_sync_to_async(dispatch)(debate_id, force=True)
    return ids


class Orphans:
    """One sweep of `watch_orphans`: what to run here now. A debate whose runner went silent is
    taken at once; one that no runner has claimed only once it stayed so for a lease's length (a
    sibling that admitted it claims it within milliseconds). Taking is a claim, so of several
    processes sweeping, one runs it and the others find it busy."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}  # unclaimed debate → when this process first saw it so

    def due(self, silent: list[int], unclaimed: list[int], now: float) -> list[int]:
        self.seen = {pk: self.seen.get(pk, now) for pk in unclaimed}
        waited = [pk for pk, first in self.seen.items() if now - first >= settings.AGORA_LEASE_SECONDS]
        for pk in waited:
            del self.seen[pk]
        return sorted({*silent, *waited})


async def watch_orphans() -> None:
    """Forever, where several processes run debates in-process: run here what nobody drives (a
    sibling that died mid-debate, or before it claimed a debate it admitted)."""
    from debates import comparisons

    orphans = Orphans()
    while True:
        try:
            await database_sync_to_async(comparisons.fail_overdue)()
            silent, unclaimed = await database_sync_to_async(leases.unheld)()
            for debate_id in orphans.due(silent, unclaimed, asyncio.get_running_loop().time()):
                log.info("debate %s: nobody drives it; running it here", debate_id)
                await database_sync_to_async(dispatch)(debate_id)
        except asyncio.CancelledError:
            raise
        except RuntimeError as error:
            if _shutting_down(error):
                return
            log.exception("the orphan watch failed; trying again")
        except Exception:  # a failed sweep must not end the watch
            log.exception("the orphan watch failed; trying again")
        await asyncio.sleep(settings.AGORA_HEARTBEAT)


def attach_to_daphne() -> bool:
    """Daphne creates its event loop when imported, before it serves: run debates there and pick up
    interrupted ones as soon as it runs, even if no one visits. (With workers, their watchdogs do
    that.)"""
    server = sys.modules.get("daphne.server")
    loop = getattr(server, "twisted_loop", None)
    if loop is None or settings.AGORA_RUNNER != "inprocess":
        return False
    debate_loop.server_loop = loop
    loop.call_soon_threadsafe(lambda: loop.create_task(resume_interrupted()), context=contextvars.Context())
    loop.call_soon_threadsafe(lambda: loop.create_task(watch_human_deadlines()), context=contextvars.Context())
    if settings.AGORA_PROCESSES > 1:
        loop.call_soon_threadsafe(lambda: loop.create_task(watch_orphans()), context=contextvars.Context())
    return True


# -- a person at the table -------------------------------------------------------------------------


class NotAwaited(Exception):
    """The turn is not waiting for this person any more (written already, or its deadline passed)."""


class TooLate(NotAwaited):
    """The person's text came after the turn's deadline: refused, and the seat's stand-in (a model,
    or a pass, as the seat chose) was given the turn instead, in the same transaction."""

    def __init__(self, key: str, stand_in: str):
        super().__init__(key)
        self.stand_in = stand_in


def _past_deadline(awaiting: dict, now) -> bool:
    deadline = awaiting.get("deadline_at")
    if not deadline:
        return False
    try:
        return datetime.fromisoformat(deadline) <= now
    except ValueError:  # not a time: nobody can be on time for it
        return True


def submit_human_turn(debate: Debate, key: str, given: dict, *, door: str = "speak") -> None:
    """Store what a person gave for the turn `key` and run the debate on from it: once. A second
    submission (a double click, a second tab, the deadline firing at the same moment) finds the
    turn no longer awaited and raises NotAwaited, changing nothing. A person's text (`given` has
    "text") is checked against the deadline under the row's lock, in the transaction that stores
    it: late, it is refused and the seat's stand-in speaks instead (TooLate, raised once the debate
    runs on). RunningLimitReached as `start`."""
    late = None

    def claim():
        nonlocal late
        row = Debate.objects.select_for_update().get(pk=debate.pk)
        if row.status != Status.WAITING or row.awaiting.get("key") != key:
            raise NotAwaited(key)
        now = timezone.now()
        stored = given
        if "text" in given and _past_deadline(row.awaiting, now):
            late = "pass" if row.awaiting.get("stand_in") == "pass" else "llm"
            stored = {"stand_in": late}
        # Cleared in the same statement that checks it: two claims cannot both pass.
        changed = Debate.objects.filter(pk=debate.pk, status=Status.WAITING, awaiting__key=key).update(
            awaiting={}, human_inputs={**row.human_inputs, key: {**stored, "at": now.isoformat()}}
        )
        if not changed:
            raise NotAwaited(key)

    start(debate, door=door, prepare=claim)
    if late is not None:
        log.info("debate %s: %s came after the deadline; refused (%s)", debate.pk, key, late)
        raise TooLate(key, late)


def _overdue() -> list[tuple[Debate, str, str]]:
    now = timezone.now().isoformat()
    waiting = Debate.objects.filter(status=Status.WAITING).exclude(awaiting={})
    return [
        (d, d.awaiting["key"], d.awaiting.get("stand_in", "llm"))
        for d in waiting
        if d.awaiting.get("deadline_at", "~") <= now
    ]


def expire_human_turns() -> list[int]:
    """Turns whose person missed the deadline: a model speaks for them, or the turn passes, as the
    seat says. Run by every process that runs debates (a watch every second); idempotent."""
    expired = []
    for debate, key, stand_in in _overdue():
        try:
            submit_human_turn(debate, key, {"stand_in": "pass" if stand_in == "pass" else "llm"}, door="deadline")
        except (NotAwaited, running_limit.RunningLimitReached):
            continue  # answered meanwhile, or its owner is at the limit: the next watch tries again
        log.info("debate %s: %s missed the deadline (%s)", debate.pk, key, stand_in)
        expired.append(debate.pk)
    return expired


async def watch_human_deadlines(interval: float = 1.0) -> None:
    """Forever: hand overdue turns on. A deadline is a stored time, so it survives restarts."""
    while True:
        try:
            await database_sync_to_async(expire_human_turns)()
        except asyncio.CancelledError:
            log.info("the deadline watch ends: the server is stopping")
            raise
        except RuntimeError as error:
            if not _shutting_down(error):
                log.exception("the deadline watch failed; trying again")
            else:  # the process is going: a normal end, not an error (the next start watches again)
                log.info("the deadline watch ends: the server is shutting down")
                return
        except Exception:  # a failed sweep must not end the watch
            log.exception("the deadline watch failed; trying again")
        await asyncio.sleep(interval)


def _shutting_down(error: RuntimeError) -> bool:
    """The error the sweep meets once the interpreter (or the server's thread pools) shut down:
    `runserver`'s reloader and Ctrl-C end the main thread while the server's loop still ticks."""
    return "cannot schedule new futures after" in str(error) or "Event loop is closed" in str(error)
