"""The threads Django's synchronous code runs on for HTTP requests: a few, shared, not one each.

Django's ASGI handler runs each request's synchronous part (middleware, view, templates, ORM) on
a thread made for that request. In a web process in front of workers (AGORA_RUNNER=worker), which
serves pages and relays tokens that workers make, a burst of page loads (a class opening its
debates, a link shared) is a burst of threads all wanting Python's interpreter lock at once with
the event loop that relays tokens and the thread that catches new viewers up; the loop gets one
turn in many and every viewer's tokens wait. Measured with one worker running 16 debates × 3
viewers (bench/README.md, thirteenth session): the web process spends about 2 s at 80–90% of a
core on the 48 page loads and joins, and tokens written meanwhile reached viewers at p99
459–972 ms with a thread per request, 58–103 ms on two shared threads (with four, 106–500 ms).

There requests share AGORA_PAGE_THREADS threads (2 by default in worker mode). A request runs all
of its synchronous code on one of them (its database connection and transaction stay on one
thread, as Django's thread-sensitive mode requires), chosen when it arrives: a thread not held by
a slow job (one running longer than SLOW seconds: a model drafting a persona, a provider's
connection test, a large export) before one that is, then the one with the least work queued.
What is counted is work handed to the thread, not requests open: a long event stream (the API's,
the model endpoint's) waits on the loop, not on a thread, and holds none.

Where debates run in the web process (the default, `make run`) the same two threads made things
worse: 30 debates × 3 on PostgreSQL, p99 120–401 ms against 87–109 ms with a thread per request
(50 on SQLite: the page loads queued for 8 s behind the starts). There the default is 0, Django's
own thread per request.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext

# A page's synchronous work takes milliseconds (a live page held the interpreter ~18 ms in a py-spy
# profile of 96 page loads at 16 debates); a job running this long is waiting on something slow,
# and new requests are better queued elsewhere.
SLOW = 0.25


class PageThread(ThreadPoolExecutor):
    """One thread, and how much work it has: `submitted` is counted on the event loop's thread,
    `finished` on this one (each counter has one writer, so neither loses a count)."""

    def __init__(self, name: str):
        super().__init__(max_workers=1, thread_name_prefix=name)
        self.submitted = 0
        self.finished = 0
        self.running_since: float | None = None  # when its current job began (None: none running)

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(self._counted, fn, *args, **kwargs)

    def _counted(self, fn, *args, **kwargs):
        self.running_since = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            self.running_since = None
            self.finished += 1

    def queued(self) -> int:
        return self.submitted - self.finished

    def running_for(self, now: float) -> float:
        since = self.running_since
        return 0.0 if since is None else now - since


class PageThreads:
    """ASGI middleware: the wrapped app's thread-sensitive work runs on one of `threads` threads."""

    def __init__(self, app, threads: int):
        if threads < 1:
            raise ValueError("PageThreads needs at least one thread")
        self.app = app
        self.threads = [PageThread(f"pages-{n}") for n in range(threads)]

    def choose(self) -> PageThread:
        now = time.monotonic()
        return min(self.threads, key=lambda t: (t.running_for(now) > SLOW, t.queued()))

    async def __call__(self, scope, receive, send):
        # Django's handler enters a ThreadSensitiveContext of its own per request; inside this one
        # it is a no-op, and every sync_to_async(thread_sensitive=True) of the request (Django's
        # and ours) goes to the chosen thread.
        async with ThreadSensitiveContext(executor=self.choose()):
            await self.app(scope, receive, send)


def shared(app, threads: int):
    """`app` on `threads` shared threads; `app` itself (a thread per request) when 0."""
    return PageThreads(app, threads) if threads else app
