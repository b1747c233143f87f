"""`LocalModelClient`: the bundled local model behind the common OpenAI-compatible client.

See the package docstring (`debates.providers.local`). No Django imports.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from ..base import Completion, ProviderUnavailable
from ..openai_compat import OpenAICompatibleClient, _Call
from ..reasoning import is_reasoning_model
from ..thinking import grammar_after_thinking
from .gguf import thinks as template_thinks
from .server import SERVER_KEY, LocalModelServer
from .weights import MODEL_ALIAS, LocalWeights, resolve_model_path

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
    """The bundled local model through the common OpenAI-compatible client. See the package docstring."""

    supports_grammar = True  # llama.cpp's server takes a GBNF `grammar` in the request body

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
        # A thinking model (by its file name, then by its chat template once the file is known):
        # its thinking gets headroom, and a grammar applies to the answer after it.
        self.thinks = is_reasoning_model(alias)
        self._template_read = False
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
        if not self._template_read:
            self._template_read = True
            self.thinks = self.thinks or await asyncio.to_thread(template_thinks, server.model_path)
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
            self.base_url = server.base_url  # SDK clients are keyed by URL: the next call gets a new one

    @property
    def reasons(self) -> bool:
        return super().reasons or self.thinks

    def _body(self, call: _Call) -> dict[str, Any]:
        """As any server's, but a thinking model's grammar lets it think first: llama.cpp applies
        a request's grammar from the first token, thinking included (see grammar_after_thinking)."""
        body = super()._body(call)
        if self.thinks and isinstance(body.get("grammar"), str):
            body["grammar"] = grammar_after_thinking(body["grammar"])
        return body

    async def _attempt(self, call: _Call, body: dict[str, Any], completion: Completion) -> AsyncIterator[str]:
        # Every attempt (first or retry) makes sure the server is up, restarting it if it died:
        # this runs before the request is sent, so it is outside every timeout.
        await self.ensure_ready()
        body = self._body(call)  # the first call may be what read the model's template
        async with contextlib.aclosing(super()._attempt(call, body, completion)) as deltas:
            async for delta in deltas:
                yield delta

    def stop(self) -> None:
        """Stop this client's server process (it also stops when the app exits)."""
        if self._server is not None:
            self._server.stop()
