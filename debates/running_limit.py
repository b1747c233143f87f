"""The per-user cap on debates running at once (`AGORA_MAX_RUNNING_PER_USER`).

Every path that makes a debate run (a new one, Resume, Retry turn, Continue at the checkpoint)
goes through `admit`, which counts and marks the debate queued in one transaction that two
requests of the same owner cannot interleave: on PostgreSQL the owner's user row is locked first;
on SQLite every transaction is `BEGIN IMMEDIATE` (settings), which already holds the database's
write lock from its first statement. Debates without an owner (the terminal) are not counted.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.translation import ngettext

from debates.models import ACTIVE_STATUSES, Debate, Status


class RunningLimitReached(Exception):
    """Refused: the owner already runs as many debates as allowed. `str()` is for the user."""

    def __init__(self, running: int, limit: int) -> None:
        super().__init__(message(running, limit))


def message(running: int, limit: int) -> str:
    return ngettext(
        "You already have %(running)d debate running (the limit is %(limit)d). Stop it or wait for it to finish.",
        "You already have %(running)d debates running (the limit is %(limit)d). Stop one or wait for it to finish.",
        running,
    ) % {"running": running, "limit": limit}


def admit(debate: Debate, **changes) -> None:
    """Mark `debate` queued (with `changes` to its row) if its owner is under the limit; raise
    RunningLimitReached otherwise, changing nothing."""
    with transaction.atomic():
        if debate.owner_id is not None:
            # Serialise this owner's admissions (a no-op on SQLite, see the module docstring).
            list(get_user_model().objects.select_for_update().filter(pk=debate.owner_id).values_list("pk"))
            running = (
                Debate.objects.filter(owner_id=debate.owner_id, status__in=ACTIVE_STATUSES)
                .exclude(pk=debate.pk)
                .count()
            )
            limit = settings.AGORA_MAX_RUNNING_PER_USER
            if running >= limit:
                raise RunningLimitReached(running, limit)
        Debate.objects.filter(pk=debate.pk).update(
            status=Status.QUEUED, status_detail="", stop_requested=False, **changes
        )
