"""The Tasks API backend of a single process (the default, `AGORA_RUNNER=inprocess`).

A task runs at once, in the background: `enqueue` hands it to a thread of its own and returns. For
a debate that thread only waits; the debate itself runs on the web server's event loop
(`debates.runner.DebateLoop`), so no second service is needed and nothing waits in a queue
between the request and the run. (django-tasks' ImmediateBackend, whose bookkeeping this reuses,
would run the task inside `enqueue`, i.e. inside the request.)
"""

from __future__ import annotations

import threading

from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.base import TaskResult, TaskResultStatus
from django_tasks.utils import get_random_id


class InProcessBackend(ImmediateBackend):
    supports_async_task = False

    def enqueue(self, task, args, kwargs) -> TaskResult:
        self.validate_task(task)
        result = TaskResult(
            task=task,
            id=get_random_id(),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        threading.Thread(target=self._execute_task, args=(result,), name=f"task-{result.id[:8]}", daemon=True).start()
        return result
