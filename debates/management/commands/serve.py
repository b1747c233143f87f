"""`manage.py serve --processes N`: N daphne processes on one listening socket, each serving pages
and WebSockets and running debates on its own event loop (one per core: Python runs one thread's
code at a time, so one process never uses more than a core).

The socket is opened here once and handed to every child (`python -m agora.web --fd`: daphne on
uvloop, agora/event_loop.py), so the kernel spreads the connections among them and no proxy is
needed in front. The processes share the database and reach each other's viewers through Redis
(REDIS_URL; the in-memory channel layer stays inside one process). Each child is told how many
siblings it has (AGORA_PROCESSES), so that at start it takes over only the debates nobody drives
(`debates.control.watch_orphans`), never a sibling's.

If one child exits, the others are stopped and this command exits with an error, so a supervisor
(systemd, a container runtime) restarts the set; SIGTERM and Ctrl-C stop them all.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Serve Agora from N daphne processes sharing one socket (N = the cores, by default)."

    def add_arguments(self, parser):
        parser.add_argument("--processes", type=int, default=len(os.sched_getaffinity(0)))
        parser.add_argument("-b", "--bind", default="127.0.0.1")
        parser.add_argument("-p", "--port", type=int, default=8000)
        parser.add_argument("--proxy-headers", action="store_true", help="trust X-Forwarded-For (behind a proxy)")

    def handle(self, *args, processes: int, bind: str, port: int, proxy_headers: bool, **options):
        if processes < 1:
            raise CommandError("--processes must be at least 1.")
        if processes > 1 and not settings.REDIS_URL:
            raise CommandError(
                "More than one process needs REDIS_URL (e.g. redis://127.0.0.1:6379/0): viewers on one process "
                "see the tokens of a debate another process runs only through Redis."
            )
        if processes > 1 and settings.AGORA_RUNNER != "inprocess":
            self.stderr.write("AGORA_RUNNER=worker: these processes serve pages; the workers run the debates.")
        if ":" in bind:  # daphne adopts the socket as IPv4 (`--fd`)
            raise CommandError(f"--bind {bind}: give an IPv4 address (0.0.0.0: every interface), or a proxy in front.")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((bind, port))
        listener.listen(1024)
        fd = listener.fileno()
        command = [sys.executable, "-m", "agora.web", "--fd", str(fd), "agora.asgi:application"]
        if proxy_headers:
            command.insert(3, "--proxy-headers")
        env = {**os.environ, "AGORA_PROCESSES": str(processes)}
        children = [subprocess.Popen(command, pass_fds=(fd,), env=env) for _ in range(processes)]
        listener.close()  # the children hold it now
        self.stdout.write(f"agora: {processes} process(es) on http://{bind}:{port}/ (pids {[c.pid for c in children]})")
        stopping = False

        def stop(_signum=None, _frame=None):
            nonlocal stopping
            stopping = True
            for child in children:
                if child.poll() is None:
                    child.terminate()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not stopping and all(c.poll() is None for c in children):
            time.sleep(0.5)
        died = None if stopping else next(c for c in children if c.poll() is not None)
        if died is not None:  # one child ended on its own: stop the rest, and tell the supervisor
            self.stderr.write(f"agora: process {died.pid} exited with {died.returncode}; stopping the others")
            stop()
        deadline = time.monotonic() + 30
        for child in children:
            try:
                child.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        if died is not None:
            raise CommandError(f"process {died.pid} of the set exited with {died.returncode}; see its log above")
