"""The debate job for Django's Tasks API (the django-tasks backport on Django 5.2; the import
moves to `django.tasks` unchanged on Django 6).

A worker runs `run_debate_task(debate_id)`. Inside `manage.py agora_worker` many of these share
one event loop (`worker_loop`), so one worker process drives many debates; under the stock
`manage.py db_worker` each runs on its own loop, one at a time.
"""

from __future__ import annotations

import asyncio
import contextvars

try:  # Django 6
    from django.tasks import task
except ImportError:  # Django 5.2 + django-tasks
    from django_tasks import task

from debates import runner

# Set by `agora_worker`: the event loop its threads hand debates to.
worker_loop: asyncio.AbstractEventLoop | None = None


@task()
def run_debate_task(debate_id: int) -> str:
    coroutine = runner.execute(debate_id)
    if worker_loop is not None:
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, worker_loop)
        return future.result()
    return asyncio.run(coroutine)
