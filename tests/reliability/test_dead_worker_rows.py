"""A worker killed mid-debate leaves its django-tasks-db row RUNNING forever (seen: 13 after 14
kills). The watchdog that queues the debate again closes that row as superseded (issue 19: 18).
The real kill -9 of a worker on PostgreSQL: tests/web/test_scale_out.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from debates import leases, tasks
from debates.models import Debate, Status

pytestmark = pytest.mark.django_db

DB_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def running_debate(owner, *, silent_for: float) -> Debate:
    return Debate.objects.create(
        owner=owner,
        question="念佛与参禅？",
        format="duel",
        status=Status.RUNNING,
        runner_id="host:4242:dead",
        heartbeat_at=timezone.now() - timedelta(seconds=silent_for),
    )


def claimed_row(debate: Debate, worker: str) -> DBTaskResult:
    """A task row as a worker leaves it once it claimed the job: RUNNING."""
    result = tasks.run_debate_task.enqueue(debate.pk)
    row = DBTaskResult.objects.get(pk=result.id)
    row.claim(worker)
    return row


@override_settings(TASKS=DB_TASKS)
def test_the_watchdog_closes_a_dead_workers_row_and_queues_a_fresh_one(alice, settings):
    stale = running_debate(alice, silent_for=settings.AGORA_LEASE_SECONDS + 5)
    live = running_debate(alice, silent_for=0)
    dead_row = claimed_row(stale, "host:4242/0")
    live_row = claimed_row(live, "host:5151/0")

    assert leases.reclaim_stale(tasks.requeue) == [stale.pk]

    dead_row.refresh_from_db()
    assert dead_row.status == "FAILED" and dead_row.finished_at is not None
    assert dead_row.exception_class_path == tasks.SUPERSEDED and "Superseded" in dead_row.traceback
    fresh = DBTaskResult.objects.filter(args_kwargs__args__0=stale.pk, status="READY")
    assert fresh.count() == 1
    live_row.refresh_from_db()
    assert live_row.status == "RUNNING"  # a debate whose runner is alive keeps its row
    assert not DBTaskResult.objects.filter(status="RUNNING", args_kwargs__args__0=stale.pk).exists()


@override_settings(TASKS=DB_TASKS)
def test_a_second_watchdog_pass_changes_nothing(alice, settings):
    stale = running_debate(alice, silent_for=settings.AGORA_LEASE_SECONDS + 5)
    claimed_row(stale, "host:4242/0")
    leases.reclaim_stale(tasks.requeue)

    assert leases.reclaim_stale(tasks.requeue) == []  # queued once: its lease is fresh again
    assert DBTaskResult.objects.filter(args_kwargs__args__0=stale.pk).count() == 2
