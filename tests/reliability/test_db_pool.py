"""PostgreSQL connections come from psycopg's pool by default (DATABASE_POOL*), persistent
connections and the pool are never both on, and a pooled connection serves many threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from testkit.servers import ROOT, postgres_database

PG = "postgres://agora:agora@db.invalid/agora"
SHOW = (
    "import json, agora.settings as s; d = s.DATABASES['default']; "
    "print(json.dumps({'max_age': d['CONN_MAX_AGE'], 'options': d.get('OPTIONS', {})}))"
)
POOL_VARS = ("DATABASE_URL", "DATABASE_POOL", "DATABASE_POOL_MIN", "DATABASE_POOL_MAX", "DATABASE_POOL_TIMEOUT")


def _environ(**env: str) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in POOL_VARS and k != "DATABASE_CONN_MAX_AGE"}
    return {**base, **env}


def settings_with(**env: str) -> subprocess.CompletedProcess:
    """Settings are read once per process: load them afresh in a child with this environment."""
    return subprocess.run(
        [sys.executable, "-c", SHOW], cwd=ROOT, env=_environ(**env), capture_output=True, text=True, timeout=60
    )


def database(**env: str) -> dict:
    done = settings_with(**env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_postgresql_is_pooled_by_default_with_sizes_from_the_environment():
    assert database(DATABASE_URL=PG) == {
        "max_age": 0,
        "options": {"pool": {"min_size": 2, "max_size": 20, "timeout": 30.0}},
    }
    sized = database(DATABASE_URL=PG, DATABASE_POOL_MIN="1", DATABASE_POOL_MAX="7", DATABASE_POOL_TIMEOUT="2.5")
    assert sized["options"]["pool"] == {"min_size": 1, "max_size": 7, "timeout": 2.5}


def test_the_pool_can_be_turned_off_for_persistent_connections():
    assert database(DATABASE_URL=PG, DATABASE_POOL="0", DATABASE_CONN_MAX_AGE="600") == {
        "max_age": 600,
        "options": {},
    }


def test_persistent_connections_with_the_pool_stop_start_up_and_say_what_to_change():
    done = settings_with(DATABASE_URL=PG, DATABASE_CONN_MAX_AGE="600")
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr
    assert "unset DATABASE_CONN_MAX_AGE" in done.stderr and "DATABASE_POOL=0" in done.stderr
    # An explicit 0 is what the pool needs anyway.
    assert "pool" in database(DATABASE_URL=PG, DATABASE_CONN_MAX_AGE="0")["options"]


def test_a_typo_in_database_pool_stops_start_up():
    done = settings_with(DATABASE_URL=PG, DATABASE_POOL="of")
    assert done.returncode != 0 and "DATABASE_POOL='of'" in done.stderr


def test_sqlite_is_not_pooled():
    sqlite = database()
    assert "pool" not in sqlite["options"] and sqlite["max_age"] is None


# Twelve threads share a pool of at most three connections: each query runs, on one of three
# PostgreSQL backends, and every thread's connection goes back to the pool when it closes.
THREADS = """
import json, threading
from django.db import connection, connections

pids, errors = [], []

def work():
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid(), pg_sleep(0.05)")
            pids.append(cursor.fetchone()[0])
    except Exception as error:
        errors.append(repr(error))
    finally:
        connections.close_all()

threads = [threading.Thread(target=work) for _ in range(12)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
pool = connection.pool
print(json.dumps({"pooled": pool is not None, "max": pool.max_size, "pids": pids, "errors": errors}))
"""


@pytest.mark.slow
def test_a_pooled_connection_serves_many_threads_on_real_postgresql():
    admin, name, url = postgres_database("agora_pool")
    try:
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", THREADS],
            cwd=ROOT,
            env=_environ(DATABASE_URL=url, DATABASE_POOL_MIN="1", DATABASE_POOL_MAX="3"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    assert result["pooled"] and result["max"] == 3
    assert result["errors"] == [] and len(result["pids"]) == 12
    assert 1 <= len(set(result["pids"])) <= 3
