"""Leases: at most one runner writes a debate at a time, and a dead runner's debate is taken over.

A runner claims a debate before running it and renews the claim with a heartbeat. The sink checks
the claim on every write (a fencing token), so a runner that lost its lease — paused too long,
cut off from the database — can no longer change the debate once another has taken it over. A
watchdog in every worker re-enqueues debates whose lease went stale: that is how a debate whose
worker died is resumed, at turn level, by another worker.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from debates.models import ACTIVE_STATUSES, Debate

QUEUED = "queued"  # the lease marker of a debate handed back to the queue by the watchdog


class LeaseLost(Exception):
    """Another runner owns this debate now; stop without writing anything more."""


def new_runner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _cutoff():
    return timezone.now() - timedelta(seconds=settings.AGORA_LEASE_SECONDS)


def claim(debate_id: int, runner_id: str, *, force: bool = False) -> bool:
    """Take the debate if nobody holds a live lease (or `force`: the caller knows the holder died,
    e.g. the single web process restarting)."""
    debates = Debate.objects.filter(pk=debate_id)
    if not force:
        debates = debates.filter(
            Q(runner_id="") | Q(runner_id=QUEUED) | Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=_cutoff())
        )
    return debates.update(runner_id=runner_id, heartbeat_at=timezone.now()) == 1


def renew(debate_id: int, runner_id: str) -> tuple[bool, bool]:
    """Heartbeat. Returns (still ours, stop requested)."""
    if not Debate.objects.filter(pk=debate_id, runner_id=runner_id).update(heartbeat_at=timezone.now()):
        return False, False
    return True, Debate.objects.filter(pk=debate_id, stop_requested=True).exists()


def release(debate_id: int, runner_id: str) -> None:
    Debate.objects.filter(pk=debate_id, runner_id=runner_id).update(runner_id="", heartbeat_at=None)


def is_held(debate: Debate) -> bool:
    return bool(debate.runner_id) and debate.heartbeat_at is not None and debate.heartbeat_at >= _cutoff()


def reclaim_stale(enqueue) -> list[int]:
    """Hand debates whose runner went silent back to the queue, once each (the conditional update
    makes concurrent watchdogs agree on who re-enqueues)."""
    stale = (
        Debate.objects.filter(status__in=ACTIVE_STATUSES, heartbeat_at__lt=_cutoff())
        .exclude(runner_id="")
        .exclude(runner_id=QUEUED)
        .values_list("pk", "runner_id")
    )
    reclaimed = []
    for pk, holder in stale:
        taken = Debate.objects.filter(pk=pk, runner_id=holder, heartbeat_at__lt=_cutoff()).update(
            runner_id=QUEUED, heartbeat_at=timezone.now()
        )
        if taken:
            enqueue(pk)
            reclaimed.append(pk)
    return reclaimed


def unheld() -> tuple[list[int], list[int]]:
    """Active debates nobody is driving, for processes that run debates side by side
    (`AGORA_PROCESSES` > 1): (those whose runner went silent, those no runner has claimed yet).
    An unclaimed one may be a sibling's that is about to be claimed: the caller waits a lease's
    length before it takes one of those."""
    active = Debate.objects.filter(status__in=ACTIVE_STATUSES)
    silent = list(active.filter(heartbeat_at__lt=_cutoff()).values_list("pk", flat=True))
    unclaimed = list(active.filter(heartbeat_at__isnull=True).values_list("pk", flat=True))
    return silent, unclaimed
