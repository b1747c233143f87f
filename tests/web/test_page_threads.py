"""HTTP requests' synchronous work on a few shared threads (agora/page_threads.py).

Django gives every request a thread of its own; a burst of page loads then starves the loop that
streams tokens (what that costs is measured by bench/, not here). These tests check the rule
itself: concurrent requests use at most AGORA_PAGE_THREADS threads, a request keeps one thread for
all its synchronous calls, a slow request leaves the others a free thread, and the site's HTTP
application is wired through it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.test import override_settings

from agora import checks
from agora.page_threads import SLOW, PageThreads, shared
from testkit.servers import ROOT


def _scope(path: str = "/") -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }


class ThreadNoter:
    """A minimal ASGI app: its request makes two thread-sensitive calls (as Django's handler and
    a view do) and answers with the threads they ran on; a request for /slow waits in its sync
    code until `release` is set."""

    def __init__(self):
        self.release = threading.Event()
        self.slow_started = threading.Event()

    def _sync(self, path: str) -> str:
        if path == "/slow":
            self.slow_started.set()
            self.release.wait(20)
        else:
            threading.Event().wait(0.02)  # long enough that the concurrent requests overlap
        return threading.current_thread().name

    async def __call__(self, scope, receive, send):
        first = await sync_to_async(self._sync)(scope["path"])
        second = await sync_to_async(threading.current_thread)()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": f"{first} {second.name}".encode()})


async def _get(app, path: str = "/") -> list[str]:
    communicator = ApplicationCommunicator(app, _scope(path))
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    assert start["status"] == 200
    body = await communicator.receive_output(10)
    await communicator.wait()
    return body["body"].decode().split()


async def test_concurrent_requests_share_the_configured_threads():
    app = PageThreads(ThreadNoter(), 2)
    answers = await asyncio.gather(*(_get(app) for _ in range(10)))
    for first, second in answers:
        assert first == second, "a request's synchronous calls moved between threads"
    used = {first for first, _ in answers}
    assert used == {"pages-0_0", "pages-1_0"}


async def test_a_slow_request_holds_one_thread_and_the_others_use_the_free_one():
    inner = ThreadNoter()
    app = PageThreads(inner, 2)
    slow = asyncio.ensure_future(_get(app, "/slow"))
    assert await asyncio.to_thread(inner.slow_started.wait, 10)
    await asyncio.sleep(SLOW + 0.1)  # until then it looks like any page's work
    try:
        # Every request that comes while /slow holds its thread is answered, on the other thread.
        quick = await asyncio.wait_for(asyncio.gather(*(_get(app) for _ in range(6))), 10)
        assert not slow.done()
    finally:
        inner.release.set()
    slow_thread = (await slow)[0]
    assert {first for first, _ in quick} == {"pages-0_0", "pages-1_0"} - {slow_thread}
    assert [t.queued() for t in app.threads] == [0, 0]


async def test_a_long_request_waiting_on_the_loop_holds_no_thread():
    """An event stream stays open for a whole debate, waiting on the loop: both threads stay free."""
    opened = asyncio.Event()
    stop = asyncio.Event()

    async def stream(scope, receive, send):
        if scope["path"] == "/stream":
            await sync_to_async(threading.current_thread)()
            opened.set()
            await stop.wait()
        await ThreadNoter()(scope, receive, send)

    app = PageThreads(stream, 2)
    streams = [asyncio.ensure_future(_get(app, "/stream")) for _ in range(2)]
    await asyncio.wait_for(opened.wait(), 10)
    await asyncio.sleep(0.05)
    try:
        answers = await asyncio.wait_for(asyncio.gather(*(_get(app) for _ in range(10))), 10)
    finally:
        stop.set()
    assert {first for first, _ in answers} == {"pages-0_0", "pages-1_0"}
    await asyncio.gather(*streams)


async def test_work_counts_come_back_when_the_view_fails():
    def fail():
        raise RuntimeError("view failed")

    async def failing(scope, receive, send):
        await sync_to_async(fail)()

    app = PageThreads(failing, 2)
    with pytest.raises(RuntimeError, match="view failed"):
        await app(_scope(), None, None)
    assert [t.queued() for t in app.threads] == [0, 0]


def test_zero_keeps_djangos_thread_per_request():
    def app(scope, receive, send):
        return None

    assert shared(app, 0) is app
    three = shared(app, 3)
    assert isinstance(three, PageThreads) and len(three.threads) == 3


# The site's application (agora.asgi) is built once per process from the settings: each case is
# a fresh interpreter, which serves one real request and says what its threads were.
SITE_REQUEST = """
import asyncio, threading
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.signals import request_started
from agora.asgi import application
from tests.web.test_page_threads import _scope

seen = []
request_started.connect(lambda sender, **kw: seen.append(threading.current_thread().name), weak=False)

async def main():
    communicator = ApplicationCommunicator(application, _scope("/accounts/login/"))
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(20)
    while (await communicator.receive_output(20)).get("more_body"):
        pass
    await communicator.wait()
    print(settings.AGORA_PAGE_THREADS, start["status"], seen[0])

asyncio.run(main())
"""


@pytest.mark.parametrize(
    "env, threads, shared_threads",
    [
        ({}, 0, False),  # debates in the web process: Django's thread per request
        ({"AGORA_RUNNER": "worker"}, 2, True),  # pages and relays only: two shared threads
        ({"AGORA_PAGE_THREADS": "3"}, 3, True),
    ],
)
def test_the_sites_requests_run_where_the_settings_say(template_db, tmp_path, env, threads, shared_threads):
    database = tmp_path / "db.sqlite3"
    shutil.copy(template_db, database)
    clean = {k: v for k, v in os.environ.items() if k not in ("AGORA_RUNNER", "AGORA_PAGE_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", SITE_REQUEST],
        cwd=ROOT,
        env={**clean, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "0", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    setting, status, thread = done.stdout.split()[-3:]
    assert (int(setting), status) == (threads, "200")
    assert thread.startswith("pages-") is shared_threads, thread


@override_settings(AGORA_PAGE_THREADS=-1)
def test_a_negative_count_is_a_system_error_with_the_fix():
    found = [p for p in checks.runner_settings(None) if p.id == "agora.E007"]
    assert found and "0 for Django's own" in found[0].hint
