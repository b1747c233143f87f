"""The per-user cap on debates running at once (`AGORA_MAX_RUNNING_PER_USER`), for a debate's run.

Every path that makes a debate run (a new one, Resume, Retry turn, Continue at the checkpoint, a
person's turn, Regenerate, Fork, Swap, the terminal) goes through `admit` with its door's name,
which passes `debates.admission.admit` (the one check for every way of spending tokens, which
also counts the owner's comparisons in flight) and marks the debate queued in the same
transaction. Debates without an owner (the terminal) are not counted.
"""

from __future__ import annotations

from django.db import transaction

from debates import admission
from debates.admission import RunningLimitReached, message  # noqa: F401 - the names callers know
from debates.models import Debate, Status


def admit(debate: Debate, door: str, **changes) -> None:
    """Mark `debate` queued (with `changes` to its row) if `door` may run it for its owner; raise
    `admission.Refused` (RunningLimitReached) otherwise, changing nothing."""
    with transaction.atomic():
        admission.admit(door, debate.owner_id, besides=debate.pk)
        Debate.objects.filter(pk=debate.pk).update(
            status=Status.QUEUED, status_detail="", stop_requested=False, **changes
        )
