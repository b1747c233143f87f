"""`manage.py agora_worker`: run debates queued through the Tasks API, many at once.

It is django-tasks-db's own worker loop (claiming jobs from the database with row locks), run in
`--threads` threads that hand each claimed debate to one shared event loop, so one process drives
many debates while each thread merely waits for its debate to end. A watchdog thread re-enqueues
debates whose runner's lease went stale (a worker that died mid-debate), closing the dead worker's
task rows as superseded, and `--health-port` serves `GET /healthz` for the process supervisor.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from django_tasks_db.management.commands.db_worker import Worker

from debates import control, leases, tasks
from debates.runner import debate_loop
from debates.warm import warm_up

log = logging.getLogger("debates.worker")


class Command(BaseCommand):
    help = "Run queued debates (AGORA_RUNNER=worker): many at once on one event loop."

    def add_arguments(self, parser):
        parser.add_argument("--threads", type=int, default=8, help="debates this process runs at once")
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between queue polls when idle")
        parser.add_argument("--queue-name", default="default")
        parser.add_argument("--health-port", type=int, default=0, help="serve GET /healthz here (0: off)")
        parser.add_argument("--worker-id", default="", help="unique id (default: host:pid)")

    def handle(self, *args, **options):
        if settings.TASKS["default"]["BACKEND"] != "django_tasks_db.DatabaseBackend":
            raise CommandError("set AGORA_RUNNER=worker (and a shared DATABASE_URL) to run workers")
        worker_id = options["worker_id"] or leases.new_runner_id().rsplit(":", 1)[0]
        warm_up()  # before the first claim: its imports would stall the debates already streaming
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="debates-loop", daemon=True).start()
        debate_loop.server_loop = loop

        workers = [
            Worker(
                queue_names=[options["queue_name"]],
                interval=options["interval"],
                batch=False,
                backend_name="default",
                startup_delay=False,
                max_tasks=None,
                worker_id=f"{worker_id}/{n}",
                excluded_queue_names=[],
            )
            for n in range(options["threads"])
        ]
        threads = [threading.Thread(target=w.run, name=f"worker-{n}", daemon=True) for n, w in enumerate(workers)]
        stopping = threading.Event()

        def shutdown(signum, frame):
            log.warning("worker %s: %s, finishing", worker_id, signal.strsignal(signum))
            for worker in workers:
                worker.running = False
            stopping.set()

        signal.signal(signal.SIGTERM, shutdown)
        signal.signal(signal.SIGINT, shutdown)
        for thread in threads:
            thread.start()
        threading.Thread(target=self.watchdog, args=(stopping,), name="watchdog", daemon=True).start()
        if options["health_port"]:
            serve_health(options["health_port"], worker_id, threads, loop)
        self.stdout.write(f"agora worker {worker_id}: {len(threads)} threads")
        while not stopping.is_set() and any(t.is_alive() for t in threads):
            stopping.wait(1)
        for thread in threads:
            thread.join(timeout=30)

    def watchdog(self, stopping: threading.Event) -> None:
        while not stopping.wait(settings.AGORA_HEARTBEAT):
            try:
                close_old_connections()
                for pk in leases.reclaim_stale(tasks.requeue):
                    log.warning("debate %s: its runner went silent; queued again to resume", pk)
                control.expire_human_turns()  # a person's missed deadline hands the turn on
            except Exception:  # the watchdog must outlive a database hiccup
                log.exception("watchdog pass failed")


def serve_health(port: int, worker_id: str, threads: list[threading.Thread], loop) -> None:
    started = time.time()

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's API
            alive = sum(t.is_alive() for t in threads)
            running = sum(1 for t in asyncio.all_tasks(loop) if not t.done())
            ok = self.path.startswith("/healthz") and alive == len(threads) and loop.is_running()
            body = json.dumps(
                {
                    "worker": worker_id,
                    "ok": ok,
                    "threads": alive,
                    "debates": running,
                    "uptime": round(time.time() - started),
                }
            ).encode()
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Health)
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
