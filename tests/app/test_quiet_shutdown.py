"""Stop and shutdown are ordinary events, logged at INFO: the deadline watch that meets the
interpreter's shutdown (`runserver`'s reloader and Ctrl-C end the main thread while the server's
loop still ticks) ends quietly instead of logging "the deadline watch failed" with a traceback each
second; a real server (daphne as the Procfile runs it, `manage.py runserver` as `make run` does)
that ran and stopped a debate, then is shut down, logs no error and no traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from testkit.http import Browser
from testkit.servers import ROOT, USERS, AgoraServer

pytestmark = [pytest.mark.slow]

# The deadline watch on a server loop in a daemon thread (as runserver runs daphne), then what
# the interpreter's shutdown runs first: concurrent.futures' exit hook shuts every thread pool.
SHUTDOWN = """
import asyncio, concurrent.futures.thread, threading, time
import django
django.setup()
from debates import control
loop = asyncio.new_event_loop()
watch = control.watch_human_deadlines(interval=0.05)
threading.Thread(target=loop.run_until_complete, args=(watch,), daemon=True).start()
time.sleep(0.5)
concurrent.futures.thread._python_exit()
time.sleep(0.5)
print("exited", flush=True)
"""


def test_the_deadline_watch_ends_at_info_when_the_interpreter_shuts_down(template_db, tmp_path):
    db = tmp_path / "agora.sqlite3"
    db.write_bytes(template_db.read_bytes())
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "agora.settings",
        "DATABASE_URL": f"sqlite:///{db}",
        "LOG_LEVEL": "INFO",
    }
    done = subprocess.run(
        [sys.executable, "-c", SHUTDOWN], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    out = done.stdout + done.stderr
    assert "exited" in out, out
    assert "INFO debates.control: the deadline watch ends: the server is shutting down" in out, out
    assert not re.search(r"\bERROR\b|Traceback|deadline watch failed", out), out


def _hears_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class RunServer(AgoraServer):
    """`make run`: Django's runserver (daphne's), reloader included."""

    def command(self) -> list[str]:
        return [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}"]

    def start(self, timeout: float = 60):
        # Its own process group, so a Ctrl-C reaches the reloader and the server it runs; and
        # Ctrl-C as a terminal delivers it: a test process may have SIGINT ignored or blocked
        # (inherited across exec), and then the server never hears it (a pytest-xdist worker did).
        popen = subprocess.Popen
        subprocess.Popen = lambda *a, **k: popen(*a, **k, start_new_session=True, preexec_fn=_hears_ctrl_c)
        try:
            return super().start(timeout)
        finally:
            subprocess.Popen = popen


@pytest.mark.parametrize(("kind", "how"), [(AgoraServer, signal.SIGTERM), (RunServer, signal.SIGINT)])
def test_a_real_server_stops_a_debate_and_shuts_down_without_an_error(tmp_path, template_db, fake_llm, kind, how):
    fake_llm.token_delay = 0.05
    server = kind(tmp_path, fake_llm.base_url, template_db).start()
    try:
        session = Browser(server.url)
        # Both run on uvloop (agora/event_loop.py): `python -m agora.web` and manage.py choose it
        # before daphne makes its loop.
        assert session.json("/healthz")["event_loop"] == "uvloop"
        session.log_in("alice", USERS["alice"])
        pk = session.start_debate({"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "2"})
        export = f"/debates/{pk}/export.json"
        session.wait_for(export, lambda d: any(t["state"] == "running" and t["text"] for t in d["turns"]))
        session.post(f"/debates/{pk}/stop/", {}, form_page=f"/debates/{pk}/")
        assert session.wait_for(export, lambda d: d["status"] == "stopped")
    finally:
        if kind is RunServer:
            os.killpg(server.process.pid, how)
        else:
            server.process.send_signal(how)
        # Daphne gives open connections up to 10 s to close; past 30 s it hangs. The log says where.
        try:
            server.process.wait(30)
        except subprocess.TimeoutExpired:
            server.process.kill()
            tail = server.log_path.read_text(errors="replace")[-4000:]
            raise AssertionError(f"the server did not shut down within 30 s of {how.name}:\n{tail}") from None
    log = server.log_path.read_text(errors="replace")
    assert f"debate {pk} stopped" in log, log[-4000:]
    assert not re.search(r"\bERROR\b|Traceback|CancelledError|deadline watch failed", log), log[-4000:]
