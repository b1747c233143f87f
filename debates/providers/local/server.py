"""The supervisor of llama.cpp's OpenAI-compatible server, run as a child process the app owns.

See the package docstring (`debates.providers.local`). No Django imports.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..base import ProviderUnavailable
from .serve import KEY_ENV
from .weights import MODEL_ALIAS

log = logging.getLogger(__name__)

# What the child needs: `debates.providers.local.serve` imports nothing else from the project.
_SERVER_MODULES = ("xllamacpp",)

NOT_INSTALLED = (
    "the local model server did not start: xllamacpp is not installed; run `make local-model` "
    "(it installs requirements-local.lock) or set OPENAI_BASE_URL to use a remote server"
)

# The child's port and host come from its argv alone. xllamacpp reads none of these variables
# (checked with 2026.10.11549), but llama_cpp.server once let `PORT` beat `--port`, so that
# `make run PORT=8000` made the child bind the app's own port and die, and llama.cpp's own tools
# read LLAMA_ARG_*: none of them reach the child, whatever a later version does with them.
_CHILD_ENV_OVERRIDES = ("HOST", "PORT", "CONFIG_FILE", "LLAMA_API_KEY")
_CHILD_ENV_PREFIXES = ("LLAMA_ARG_",)

# `python -m debates...` in the child must find this project whatever the app's working directory.
_PROJECT_ROOT = str(Path(__file__).resolve().parents[3])


def child_env(api_key: str = "") -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _CHILD_ENV_OVERRIDES and not key.startswith(_CHILD_ENV_PREFIXES)
    }
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PROJECT_ROOT, env.get("PYTHONPATH", "")) if p)
    if api_key:
        env[KEY_ENV] = api_key
    return env


def _free_port(preferred: int | None = None) -> int:
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise OSError("no free loopback port")  # pragma: no cover - bind to port 0 does not fail


_START_MARK = "# agora: starting the model server "
_LOG_ERROR = re.compile(r" E |^agora:|Error|error:")

# Health checks go straight to loopback, whatever HTTP(S)_PROXY says.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))

CommandFactory = Callable[[int, str], Sequence[str]]  # (port, api_key) -> argv

# The bearer key of this process's servers: random, so other users of the machine cannot borrow
# the loopback server; one per process, so every LocalModelClient can be built knowing it.
SERVER_KEY = secrets.token_urlsafe(24)


class LocalModelServer:
    """One xllamacpp server process (llama.cpp's OpenAI-compatible server). Thread-safe; see the package docstring."""

    _shared: dict[tuple[Any, ...], LocalModelServer] = {}
    _shared_lock = threading.Lock()

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        cache_dir: str | os.PathLike[str],
        threads: int | None = None,
        ctx: int = 4096,
        alias: str = MODEL_ALIAS,
        startup_timeout: float = 180.0,
        extra_args: Sequence[str] = (),
        command: CommandFactory | None = None,
        required_modules: Sequence[str] = _SERVER_MODULES,
    ) -> None:
        self.model_path = str(Path(model_path).expanduser().resolve())  # the child may run elsewhere
        self.cache_dir = Path(cache_dir).expanduser()
        self.threads = threads or os.cpu_count() or 1
        self.ctx = ctx
        self.alias = alias
        self.startup_timeout = startup_timeout
        self.extra_args = tuple(extra_args)
        self._command = command
        self.required_modules = tuple(required_modules)
        self.log_path = self.cache_dir / "llama-server.log"
        self.api_key = SERVER_KEY
        self.port: int | None = None
        self.starts = 0  # how many times a process was launched (restarts = starts - 1)
        self.last_load_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._healthy = False
        self._started_at = 0.0
        self._lock = threading.RLock()
        self._atexit_registered = False

    @classmethod
    def shared(cls, model_path: str | os.PathLike[str], **options: Any) -> LocalModelServer:
        """The process-wide server for this model and options (created on first request)."""
        key = (str(model_path), *sorted((k, repr(v)) for k, v in options.items()))
        with cls._shared_lock:
            server = cls._shared.get(key)
            if server is None:
                server = cls._shared[key] = cls(model_path, **options)
            return server

    @classmethod
    def stop_all(cls) -> None:
        with cls._shared_lock:
            servers = list(cls._shared.values())
        for server in servers:
            server.stop()

    # -- state ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def ready(self) -> bool:
        """Running and has passed its health check (cheap: no HTTP request)."""
        return self._healthy and self.alive()

    # -- lifecycle --------------------------------------------------------------------------

    def ensure_running(self) -> str:
        """Start the server (or restart it if it died) and wait until healthy; return base_url."""
        with self._lock:
            if self.ready():
                return self.base_url
            if self._proc is not None:
                code = self._proc.poll()
                if code is not None:
                    log.warning(
                        "local model server (pid %s) exited with code %s; restarting it (log: %s)",
                        self._proc.pid,
                        code,
                        self.log_path,
                    )
                    self._proc = None
            if self._proc is None:
                self._launch()
            self._wait_healthy()
            return self.base_url

    def _argv(self, port: int) -> list[str]:
        if self._command is not None:
            return list(self._command(port, self.api_key))
        return [
            sys.executable, "-m", "debates.providers.local.serve",
            "--model", self.model_path,
            "--alias", self.alias,
            "--port", str(port),
            "--threads", str(self.threads),
            "--ctx", str(self.ctx),
            "--watch-stdin",
            *self.extra_args,
        ]  # fmt: skip

    def _launch(self) -> None:
        missing = [m for m in self.required_modules if importlib.util.find_spec(m) is None]
        if missing:
            raise ProviderUnavailable(NOT_INSTALLED)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port(self.port)  # keep the old port across restarts when it is free
        argv = self._argv(self.port)
        # Append, so a crashed server's last words survive its restart; start afresh past 5 MB.
        with contextlib.suppress(OSError):
            if self.log_path.stat().st_size > 5 * 1024 * 1024:
                self.log_path.unlink()
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            log_file.write(f"{_START_MARK}{time.strftime('%Y-%m-%d %H:%M:%S')} on port {self.port}\n".encode())
            log_file.flush()
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                close_fds=True,
                env=child_env(self.api_key),
            )
        finally:
            log_file.close()
        self._healthy = False
        self._started_at = time.monotonic()
        self.starts += 1
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        log.info("local model server starting (pid %s, port %s, model %s)", self.pid, self.port, self.model_path)

    def _wait_healthy(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        request = urllib.request.Request(f"{self.base_url}/models", headers={"Authorization": f"Bearer {self.api_key}"})
        while True:
            code = self._proc.poll()
            if code is not None:
                self._proc = None
                raise ProviderUnavailable(
                    f"the local model server exited with code {code} while starting: {self._log_tail()} "
                    f"(full log: {self.log_path}); check the model file, free memory (it needs about "
                    "2 GB), or set OPENAI_BASE_URL to use a remote server"
                )
            try:
                with _NO_PROXY.open(request, timeout=2) as response:
                    if response.status == 200:
                        self._healthy = True
                        self.last_load_seconds = time.monotonic() - self._started_at
                        log.info("local model server ready in %.1f s", self.last_load_seconds)
                        return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ProviderUnavailable(
                    f"the local model server did not become ready within {self.startup_timeout:g} s "
                    f"({self._log_tail()}; log: {self.log_path}); the machine may be short of memory or "
                    "CPU: set AGORA_LOCAL_THREADS / AGORA_LOCAL_CTX lower, or set OPENAI_BASE_URL"
                )
            time.sleep(0.1)

    def _log_tail(self, lines: int = 4) -> str:
        """The last lines of this start's log, its error lines first: llama.cpp says why it failed
        a few lines before it says goodbye."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "no log"
        current = text.rsplit(_START_MARK, 1)[-1]
        found = [line.strip() for line in current.splitlines() if line.strip()]
        errors = [line for line in found if _LOG_ERROR.search(line)]
        return " | ".join((errors or found)[-lines:])[-400:] or "empty log"

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the process: close its stdin (it exits by itself), then SIGTERM, then SIGKILL."""
        with self._lock:
            proc, self._proc, self._healthy = self._proc, None, False
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin:
                proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout)
