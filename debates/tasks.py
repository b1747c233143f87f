"""The debate job for Django's Tasks API (the django-tasks backport on Django 5.2; the import
moves to `django.tasks` unchanged on Django 6). Every debate runs through it; the backend in
settings (AGORA_RUNNER) decides where: this process (`debates.task_backends.InProcessBackend`) or
`manage.py agora_worker` processes (`django_tasks_db.DatabaseBackend`)."""

from __future__ import annotations

try:  # Django 6
    from django.tasks import task
except ImportError:  # Django 5.2 + django-tasks
    from django_tasks import task

from debates.runner import debate_loop


@task()
def run_debate_task(debate_id: int, force: bool = False) -> str:
    """Run (or resume) one debate on this process's debate loop and wait for its outcome. `force`
    takes the debate over even if a lease says someone holds it (the caller knows it is dead)."""
    return debate_loop.run_to_end(debate_id, force=force)
