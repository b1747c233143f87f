"""The debate job for Django's Tasks API (the django-tasks backport on Django 5.2; the import
moves to `django.tasks` unchanged on Django 6). Every debate runs through it; the backend in
settings (AGORA_RUNNER) decides where: this process (`debates.task_backends.InProcessBackend`) or
`manage.py agora_worker` processes (`django_tasks_db.DatabaseBackend`)."""

from __future__ import annotations

try:  # Django 6
    from django.tasks import task
except ImportError:  # Django 5.2 + django-tasks
    from django_tasks import task

from django.db import close_old_connections

from debates.runner import debate_loop


@task()
def run_debate_task(debate_id: int, force: bool = False) -> str:
    """Run (or resume) one debate on this process's debate loop and wait for its outcome. `force`
    takes the debate over even if a lease says someone holds it (the caller knows it is dead)."""
    # This thread only waits, for minutes: its connection (from claiming the task) goes back to the
    # pool meanwhile, so a worker needs connections for queries running, not for threads waiting.
    close_old_connections()
    return debate_loop.run_to_end(debate_id, force=force)


# A row of django-tasks-db's that a killed worker was running stays RUNNING forever: the worker
# never got to mark it. When its debate is queued again, the dead row is closed as superseded.
SUPERSEDED = "debates.tasks.Superseded"


def requeue(debate_id: int) -> None:
    """Queue a debate whose runner went silent (`leases.reclaim_stale`): the task rows of the dead
    runner are marked failed, then the debate gets a fresh task."""
    supersede_dead_runs(debate_id)
    run_debate_task.enqueue(debate_id)


def supersede_dead_runs(debate_id: int) -> int:
    """Mark the database backend's RUNNING rows of this debate failed (superseded); returns how many.
    Only called for a debate whose lease went stale, so no live runner is behind these rows."""
    try:
        from django_tasks_db.models import DBTaskResult
    except ImportError:  # pragma: no cover - the backport is in requirements.txt
        return 0
    from django.utils import timezone

    return DBTaskResult.objects.filter(
        status="RUNNING", task_path=run_debate_task.module_path, args_kwargs__args__0=debate_id
    ).update(
        status="FAILED",
        finished_at=timezone.now(),
        exception_class_path=SUPERSEDED,
        traceback="Superseded: the worker running this debate stopped renewing its lease (it died); "
        "the debate was queued again and resumes from its last finished turn.\n",
    )
