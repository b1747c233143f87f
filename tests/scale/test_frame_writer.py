"""The flusher's writes and the one database thread (debates/flusher.py): on PostgreSQL a flush has
a thread of its own, so frames do not queue behind the turn events, leases and preparation of every
other debate on Channels' one database thread (one worker at 30 debates: p99 0.4–2.2 s before,
0.18–0.27 s in three of four runs after; bench/README.md). On SQLite it stays on that thread, where
a second writer would only wait in SQLite's sleeping busy handler.
Each case runs in a child process: settings, and so the database's kind, are read once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from testkit.servers import ROOT

# The one database thread is kept busy for a second; a flush's write is asked for meanwhile.
SCRIPT = """
import asyncio, json, threading, time
import django
django.setup()
from channels.db import database_sync_to_async
from debates import flusher

async def main():
    busy = asyncio.ensure_future(database_sync_to_async(time.sleep)(1.0))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    thread = await flusher._writer(lambda: threading.current_thread().name)()
    waited = time.monotonic() - started
    await busy
    print(json.dumps({"thread": thread, "waited": waited}))

asyncio.run(main())
"""


def flush_beside_a_busy_database_thread(database_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}
    env.update(DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="agora.settings")
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_on_postgresql_a_flush_does_not_wait_for_the_one_database_thread():
    # No server is needed: the write here touches no row, so no connection is made.
    got = flush_beside_a_busy_database_thread("postgres://agora:agora@db.invalid/agora")
    assert got["thread"].startswith("agora-frames"), got
    assert got["waited"] < 0.5, got


def test_on_sqlite_a_flush_stays_on_the_one_database_thread(tmp_path):
    got = flush_beside_a_busy_database_thread(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert not got["thread"].startswith("agora-frames"), got
    assert got["waited"] >= 0.8, got  # queued behind the second's sleep: one writer at a time
