"""Real Agora processes for end-to-end tests: daphne web servers and workers in subprocesses,
pointed at a fake OpenAI server. Killable with SIGKILL and restartable on the same database."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POSTGRES = os.environ.get("AGORA_TEST_POSTGRES", "postgres://agora:agora@127.0.0.1:5432/postgres")
REDIS = os.environ.get("AGORA_TEST_REDIS", "redis://127.0.0.1:6379/0")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


USERS = {"alice": "alice-password-1", "bob": "bob-password-1", "root": "root-password-1"}
CREATE_USERS = "from django.contrib.auth.models import User\n" + "\n".join(
    f"User.objects.create_{'superuser' if name == 'root' else 'user'}({name!r}, password={password!r})"
    for name, password in USERS.items()
)


SETTINGS = "testkit.settings"  # agora/settings.py with a fast password hasher (see there)


def prepare_database(path_or_url: Path | str, env: dict) -> None:
    """Migrate, load the bundled libraries and add the users (SQLite templates are then copied):
    the three commands in one process, which starts Django once instead of three times."""
    url = path_or_url if isinstance(path_or_url, str) else f"sqlite:///{path_or_url}"
    script = (
        "from django.core.management import call_command\n"
        'call_command("migrate", interactive=False, verbosity=0)\n'
        'call_command("load_libraries", verbosity=0)\n' + CREATE_USERS
    )
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env={**env, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": SETTINGS},
        check=True,
        capture_output=True,
        timeout=120,
    )


class AgoraServer:
    """A daphne web process on its own copy of `template_db` (SQLite), or on a shared
    `database_url` (PostgreSQL) when several processes must see the same data."""

    def __init__(
        self,
        workdir: Path,
        openai_base_url: str,
        template_db: Path | None = None,
        *,
        database_url: str = "",
        name: str = "daphne",
        **extra_env,
    ):
        self.workdir = workdir
        if not database_url:
            self.db = workdir / "agora.sqlite3"
            shutil.copy(template_db, self.db)
            database_url = f"sqlite:///{self.db}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"{name}.log"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "OPENAI_BASE_URL": openai_base_url,
            "OPENAI_API_KEY": "sk-test-fake",
            "DEBUG": "1",
            "LOG_LEVEL": "INFO",
            "DJANGO_SETTINGS_MODULE": SETTINGS,
            **extra_env,
        }
        self.process: subprocess.Popen | None = None

    health_path = "/"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "agora.web", "-b", "127.0.0.1", "-p", str(self.port), "agora.asgi:application"]

    popen_options: dict = {}

    def start(self, timeout: float = 30):
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.process = subprocess.Popen(
            self.command(), cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, **self.popen_options
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.command()[2]} exited: {self.log()}")
            try:
                with urllib.request.urlopen(self.url + self.health_path, timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"no answer within {timeout}s: {self.log()}")

    def kill(self) -> None:
        """SIGKILL: no cleanup, exactly like a crash."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def logged(self, pattern: str, timeout: float = 10) -> str:
        """The log once the regular expression `pattern` is in it (else the log as it stands):
        daphne writes a request's access line after the response's last byte, which the client
        may have read first."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, log := self.log()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return log


class ServedSet(AgoraServer):
    """`manage.py serve --processes N` (one socket, N daphne children) in a process group of its
    own, so a crash can kill every process of the set at once."""

    processes = 2
    health_path = "/healthz"
    popen_options = {"start_new_session": True}

    def command(self) -> list[str]:
        return [sys.executable, "manage.py", "serve", "--processes", str(self.processes), "-p", str(self.port)]

    def children(self) -> list[int]:
        """The daphne processes of the set."""
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if (
                    entry.name.isdigit()
                    and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == self.process.pid
                ):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def crash(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.crash()


class AgoraWorker(AgoraServer):
    """`manage.py agora_worker`; its `url` serves the worker's health endpoint."""

    health_path = "/healthz"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "manage.py",
            "agora_worker",
            "--threads",
            "4",
            "--interval",
            "0.1",
            "--health-port",
            str(self.port),
        ]


def require_or_skip(condition: bool, reason: str) -> None:
    """Outside CI a missing system part skips with the reason; under CI it fails: CI must have it."""
    import pytest

    if not condition:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must provide it: see .ci/run)")
        pytest.skip(reason)


def postgres_database(prefix: str = "agora_test"):
    """A fresh database on the PostgreSQL server that `bin/start-services` starts: returns the
    admin connection (drop the database with it when done), the name and the URL. Skips outside
    CI when the server is not there; fails under CI."""
    try:
        import psycopg

        admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
    except Exception as error:  # noqa: BLE001 - any failure means "no server here"
        require_or_skip(False, f"PostgreSQL is not reachable at {POSTGRES} ({error}); run bin/start-services")
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    return admin, name, POSTGRES.rsplit("/", 1)[0] + f"/{name}"


def redis_ok() -> bool:
    try:
        import redis

        return redis.Redis.from_url(REDIS, socket_connect_timeout=2).ping()
    except Exception:  # noqa: BLE001
        return False
