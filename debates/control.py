"""What the views (and the server at start-up) do to a debate's run: start it under its owner's
running limit, stop it, and pick up what a restart interrupted. Running itself goes through the
Tasks API (`debates.tasks`)."""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Callable

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction

from debates import leases, running_limit, tasks
from debates.models import ACTIVE_STATUSES, Debate, Status
from debates.runner import debate_loop

log = logging.getLogger(__name__)


def dispatch(debate_id: int, *, force: bool = False) -> None:
    """Hand an admitted debate to the Tasks API's backend."""
    tasks.run_debate_task.enqueue(debate_id, force=force)


def start(debate: Debate, *, prepare: Callable[[], None] | None = None, **changes) -> None:
    """Run a debate again (Resume, Retry turn, Continue at the checkpoint with `changes` such as
    the user's reply, and `prepare` for other rows to change with them): admitted under its
    owner's running limit, then dispatched. Raises RunningLimitReached, changing nothing. Call it
    outside any transaction."""
    with transaction.atomic():
        if prepare is not None:
            prepare()
        running_limit.admit(debate, **changes)
    dispatch(debate.pk)


def start_new(create: Callable[[], Debate]) -> Debate:
    """Create a debate with `create()` and admit it in the same transaction, so two requests of one
    owner cannot both pass the limit; then dispatch it."""
    with transaction.atomic():
        debate = create()
        running_limit.admit(debate)
    dispatch(debate.pk)
    return debate


def stop(debate: Debate) -> None:
    """Ask the debate's runner to stop. A worker elsewhere notices at its next heartbeat; a
    debate nobody holds (a crash left it active) is marked stopped here."""
    Debate.objects.filter(pk=debate.pk).update(stop_requested=True)
    if debate_loop.cancel(debate.pk):
        return
    debate.refresh_from_db()
    if not leases.is_held(debate):
        Debate.objects.filter(pk=debate.pk, status__in=ACTIVE_STATUSES).update(status=Status.STOPPED)


def _interrupted_ids() -> list[int]:
    return list(Debate.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", flat=True))


async def resume_interrupted() -> list[int]:
    """At server start (one process runs everything): debates a crash left active resume from their
    last finished turn. This process is their only runner, so the old lease is a dead one's."""
    ids = await database_sync_to_async(_interrupted_ids)()
    for debate_id in ids:
        log.info("resuming debate %s, interrupted by a restart", debate_id)
        await database_sync_to_async(dispatch)(debate_id, force=True)
    return ids


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
    return True
