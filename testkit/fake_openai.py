"""A fake OpenAI-compatible HTTP server for tests, benchmarks and demos.

Why a real server and not a mock: the `openai` SDK talks through httpx2, which request-mocking
libraries do not intercept, and the failures we care about (a socket closed mid-stream, a server
that accepts and never answers, a Retry-After header) only behave truthfully over a real socket.
So this listens on 127.0.0.1 (a free port by default), speaks HTTP/1.1 with keep-alive, and
answers like OpenAI:

    POST /v1/chat/completions   stream or not; SSE `data: {chat.completion.chunk}` ... `data: [DONE]`
    GET  /v1/models             the configured model ids

It runs on its own asyncio loop in a background thread, so sync and async tests use it the same
way::

    with FakeOpenAIServer(token_delay=0.005) as server:
        client = OpenAICompatibleClient(server.base_url, "sk-test", "fake-model")
        server.inject(Fault.rate_limit(retry_after=0.2))     # the next request gets a 429
        ...
        server.requests[0].body["messages"]                  # what was asked, and when

What a request gets, in order of precedence:
  1. 401 if the server has an `api_key` and the request's bearer token differs;
     404 `model_not_found` if the server has `models` and the request names another.
  2. An injected fault (`inject(fault, times=..., when=...)`), first matching rule wins.
  3. The `script`: a callable `(request_json) -> Reply | str | None`, or a list of replies consumed
     one per chat request. A Reply may itself carry a fault.
  4. `default_reply(request_json)`: deterministic text derived from the messages.

Reasoning servers (issue 26), switched on per server or per reply:
  `openai_reasoning=True` (or a list of model ids): those models refuse `max_tokens`, a
     `temperature` but 1, `top_p` and `stop` with OpenAI's documented 400 bodies (`param`,
     `code: unsupported_parameter` / `unsupported_value`), and count their thinking in
     `max_completion_tokens`; `refuses=[...]` refuses any other parameter the same way.
  `Reply(thinking="...")` thinks before it answers, streamed as `thinking_as` says (the reply's,
     else the server's): "reasoning_content" (DeepSeek, vLLM, llama.cpp), "reasoning"
     (OpenRouter, Ollama), "tags" (`<think>...</think>` in the content), "open" (the prompt
     opened the thinking: only `</think>` comes), or "hidden" (OpenAI: nothing streamed, only
     counted); the usage then carries `completion_tokens_details.reasoning_tokens`. The thinking
     counts against the request's token limit: a limit it uses up ends the reply with
     `finish_reason: length` and no answer. `Reply(chunks=[...])` streams the content in exactly
     those pieces (tags split across chunks).
  `sse_comments=True` sends `: OPENROUTER PROCESSING` comment lines; `azure_filters=True` opens
     the stream with Azure's `prompt_filter_results` chunk (empty `choices`).

Token timing (for token-to-viewer latency benchmarks): every streamed chunk carries an extra
field `"agora_sent_at"`, the server's `time.monotonic()` when the chunk was handed to the socket,
and the same times are kept in `RecordedRequest.token_times`. CLOCK_MONOTONIC is system-wide on
Linux, so a consumer in another process on the same machine can compare it with its own clock.
Clients (the SDK included) ignore unknown chunk fields.

Run it standalone for demos: `python -m testkit.fake_openai --port 8011 --token-delay 0.03`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from debates.providers.base import estimate_messages_tokens

__all__ = [
    "Fault",
    "FakeOpenAIServer",
    "RecordedRequest",
    "Reply",
    "default_reply",
    "max_overlap",
    "refusal",
    "tokenize",
]

DEFAULT_MODEL = "fake-model"

# ---------------------------------------------------------------------------------------------
# What to answer
# ---------------------------------------------------------------------------------------------

_CJK = "\u3000-\u9fff\uf900-\ufaff\uff00-\uffef"
_TOKEN_RE = re.compile(rf"[{_CJK}]|\s*[^\s{_CJK}]+|\s+")


def tokenize(text: str) -> list[str]:
    """Split text into small stream pieces: one CJK character, or one word with its leading space.

    `"".join(tokenize(t)) == t` always holds, so tests can compare reassembled deltas exactly.
    """
    return _TOKEN_RE.findall(text)


@dataclass(frozen=True)
class Fault:
    """A failure to inject into one response. Build with the class methods (or `Fault.parse`).

    kind:    "status" (an HTTP error: 429, 500, ...), "hang", "disconnect", "malformed",
             "empty", "long", "flood" (long, ignoring max_tokens) or "trickle" (empty chunks
             every `interval` seconds, never finishing).
    after:   content tokens streamed before the fault strikes (hang, disconnect, malformed).
    """

    kind: str
    status: int = 500
    retry_after: float | None = None
    after: int = 0
    tokens: int = 2000
    message: str = ""
    interval: float = 1.0

    @classmethod
    def rate_limit(cls, retry_after: float | None = 1.0) -> Fault:
        """429 Too Many Requests, with `Retry-After` (seconds; fractions allowed) unless None."""
        return cls("status", status=429, retry_after=retry_after, message="Rate limit reached (fake).")

    @classmethod
    def server_error(cls, status: int = 500, message: str = "The server had an error (fake).") -> Fault:
        return cls("status", status=status, message=message)

    @classmethod
    def hang(cls, after: int = 0) -> Fault:
        """Accept the request and go silent until the client leaves or the server stops.
        With `after` > 0 the headers and that many tokens are sent first."""
        return cls("hang", after=after)

    @classmethod
    def disconnect(cls, after: int = 3) -> Fault:
        """Close the socket after `after` content tokens, mid chunked body."""
        return cls("disconnect", after=after)

    @classmethod
    def malformed(cls, after: int = 0) -> Fault:
        """Send a `data:` line that is not JSON after `after` good tokens."""
        return cls("malformed", after=after)

    @classmethod
    def empty(cls) -> Fault:
        """A well-formed stream with zero content tokens."""
        return cls("empty")

    @classmethod
    def long(cls, tokens: int = 2000) -> Fault:
        """A reply of `tokens` tokens (the default reply, repeated)."""
        return cls("long", tokens=tokens)

    @classmethod
    def flood(cls, tokens: int = 20000) -> Fault:
        """Like `long`, but ignoring the request's max_tokens, as a misbehaving server would."""
        return cls("flood", tokens=tokens)

    @classmethod
    def trickle(cls, interval: float = 1.0) -> Fault:
        """Stream headers, then an empty delta every `interval` seconds, forever: the connection
        never goes silent, yet no text ever arrives."""
        return cls("trickle", interval=interval)

    @classmethod
    def parse(cls, spec: str) -> Fault:
        """`"429"`, `"429:0.5"` (Retry-After), `"500"`, `"503"`, `"hang"`, `"hang:2"`,
        `"disconnect:3"`, `"malformed:1"`, `"empty"`, `"long:500"`, `"flood:20000"`, `"trickle:1"`
        -- for the CLI and quick tests."""
        name, _, arg = spec.partition(":")
        if name.isdigit():
            code = int(name)
            if code == 429:
                return cls.rate_limit(float(arg) if arg else 1.0)
            return cls.server_error(code)
        makers: dict[str, Callable[..., Fault]] = {
            "hang": lambda a: cls.hang(int(a or 0)),
            "disconnect": lambda a: cls.disconnect(int(a or 3)),
            "malformed": lambda a: cls.malformed(int(a or 0)),
            "empty": lambda a: cls.empty(),
            "long": lambda a: cls.long(int(a or 2000)),
            "flood": lambda a: cls.flood(int(a or 20000)),
            "trickle": lambda a: cls.trickle(float(a or 1.0)),
        }
        if name not in makers:
            raise ValueError(f"unknown fault {spec!r}")
        return makers[name](arg)


@dataclass
class Reply:
    """One scripted answer. `text=None` means the default reply for the request.

    usage:         False to omit the usage chunk even when the client asked for it (servers that
                   ignore `stream_options`); prompt/completion token overrides otherwise.
    token_delay:   seconds between tokens for this reply (None: the server's setting).
    first_token_delay: seconds between the response headers and the first token ("prompt
                   processing").
    """

    text: str | None = None
    fault: Fault | None = None
    finish_reason: str = "stop"
    usage: bool = True
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    token_delay: float | None = None
    first_token_delay: float = 0.0
    thinking: str | None = None
    thinking_as: str | None = None
    reasoning_tokens: int | None = None
    chunks: list[str] | None = None


THINKING_STYLES = ("reasoning_content", "reasoning", "tags", "open", "hidden")

# OpenAI's reasoning models refuse these, in this order, one per 400 (what the API reference and
# its error bodies say: `param` names it, `code` says whether the parameter or its value).
OPENAI_REASONING_REFUSES = ("max_tokens", "temperature", "top_p", "stop")


def refusal(param: str, value: Any = None) -> dict[str, Any]:
    """OpenAI's 400 body for a parameter (or value) the model does not take."""
    if param == "max_tokens":
        message = (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        )
        code = "unsupported_parameter"
    elif param in ("temperature", "top_p") and value is not None:
        message = (
            f"Unsupported value: '{param}' does not support {value} with this model. "
            "Only the default (1) value is supported."
        )
        code = "unsupported_value"
    else:
        message = f"Unsupported parameter: '{param}' is not supported with this model."
        code = "unsupported_parameter"
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


ScriptFn = Callable[[dict[str, Any]], "Reply | str | None"]

_EN_SENTENCES = [
    "I see it differently.",
    "The evidence points both ways here.",
    "Consider the cost of being wrong.",
    "History offers a useful parallel.",
    "That assumption deserves a closer look.",
    "We agree on the goal, not the means.",
    "A concrete example helps.",
    "Let me grant the strongest version of your point.",
]
ZH_SENTENCES = [
    "我的看法有所不同。",
    "证据指向两个方向。",
    "想一想出错的代价。",
    "历史上有一个有用的先例。",
    "这个假设值得仔细推敲。",
    "我们目标一致，方法不同。",
    "举一个具体的例子。",
]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def default_reply(request: dict[str, Any]) -> str:
    """Deterministic text derived from the request, so unscripted runs still produce distinct,
    reproducible replies: same messages, same text. Replies in Chinese when the system prompt or
    the last user message is Chinese, unless the system prompt asks for English."""
    messages = request.get("messages") or []
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).digest()
    system = next((_content_text(m.get("content")) for m in messages if m.get("role") == "system"), "")
    last_user = next((_content_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    # A debate held in English says so in its system prompt (the persona's own text may still be
    # the library's Chinese): answer in English then.
    english = "Answer in English" in system
    chinese = not english and re.search(f"[{_CJK}]", system + last_user) is not None
    pool = ZH_SENTENCES if chinese else _EN_SENTENCES
    picked = [pool[b % len(pool)] for b in digest[:3]]
    joiner = "" if chinese else " "
    text = f"[{digest.hex()[:6]}] " + joiner.join(picked)
    if "可证伪：是 / 否" in last_user:
        # The panel's admission form: answered as a model that follows it would, so a debate on
        # the fake server gets past admission (which refuses an answer it cannot read).
        return f"类型：选择决策型\n可证伪：是\n理由：{text}\n话题标识：sample-debate-topic"
    if "Falsifiable: yes / no" in last_user:  # the same form in an English debate
        return f"Type: choice decision\nFalsifiable: yes\nReason: {text}\nTopic slug: sample-debate-topic"
    return text


# ---------------------------------------------------------------------------------------------
# What happened
# ---------------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as the server saw it. Times: `time.monotonic()` and `time.time()`.

    `finished` is set once the response is complete, the socket was closed, or the client left.
    `outcome`: "ok", "error" (an HTTP error status), "disconnected" (we closed mid-stream),
    "hung" (released by server stop), "client closed" (the client went away first).
    """

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    started: float
    started_wall: float
    finished: float | None = None
    finished_wall: float | None = None
    status: int | None = None
    fault: str | None = None
    outcome: str = "pending"
    # sha256 of the bearer token, hex: tests can check which secret arrived without storing it.
    bearer_sha256: str = ""
    tokens: list[str] = field(default_factory=list)
    token_times: list[float] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)  # pieces streamed as reasoning fields

    @property
    def duration(self) -> float | None:
        return None if self.finished is None else self.finished - self.started

    async def settled(self, timeout: float = 5.0) -> RecordedRequest:
        """This request once the server has finished with it. A client that hangs up is noticed at
        the server's next write to it, on the server's own thread: the client may be done first."""
        deadline = time.monotonic() + timeout
        while self.finished is None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self

    @property
    def text(self) -> str:
        """The content actually streamed."""
        return "".join(self.tokens)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages") or [])

    @property
    def system_prompt(self) -> str:
        return next((_content_text(m.get("content")) for m in self.messages if m.get("role") == "system"), "")


def max_overlap(requests: Iterable[RecordedRequest]) -> int:
    """The largest number of requests in flight at one instant (from recorded start/finish)."""
    events: list[tuple[float, int]] = []
    for r in requests:
        end = r.finished if r.finished is not None else float("inf")
        events += [(r.started, 1), (end, -1)]
    events.sort(key=lambda e: (e[0], e[1]))  # a finish at the same instant counts before a start
    peak = current = 0
    for _, step in events:
        current += step
        peak = max(peak, current)
    return peak


@dataclass
class _FaultRule:
    fault: Fault
    remaining: int | None  # None: forever
    when: Callable[[dict[str, Any]], bool] | None


class _ClientGone(Exception):
    """The client closed its side; stop writing."""


# ---------------------------------------------------------------------------------------------
# The server
# ---------------------------------------------------------------------------------------------

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class FakeOpenAIServer:
    """A real OpenAI-compatible HTTP server on a background thread. See the module docstring.

    Args:
      script:       callable `(request_json) -> Reply | str | None` or a list of replies.
      token_delay:  seconds between streamed tokens (default 0: as fast as the socket allows).
      api_key:      if set, requests must carry `Authorization: Bearer <api_key>` or get 401.
      models:       if set, requests for other models get 404 `model_not_found`.
      send_usage:   False to ignore `stream_options.include_usage` (like some local servers).
      openai_reasoning, refuses, thinking_as, sse_comments, azure_filters: see the module docstring.
    """

    def __init__(
        self,
        script: ScriptFn | Iterable[Reply | str] | None = None,
        *,
        token_delay: float = 0.0,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
        send_usage: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        openai_reasoning: bool | Iterable[str] = False,
        refuses: Iterable[str] = (),
        thinking_as: str = "reasoning_content",
        sse_comments: bool = False,
        azure_filters: bool = False,
    ) -> None:
        self.script: ScriptFn | list[Reply | str] | None = (
            script if script is None or callable(script) else list(script)
        )
        self.token_delay = token_delay
        self.api_key = api_key
        self.models = list(models) if models is not None else None
        self.send_usage = send_usage
        self.host = host
        self.port = port
        self.openai_reasoning = openai_reasoning if isinstance(openai_reasoning, bool) else set(openai_reasoning)
        self.refuses = list(refuses)
        if thinking_as not in THINKING_STYLES:
            raise ValueError(f"thinking_as must be one of {THINKING_STYLES}")
        self.thinking_as = thinking_as
        self.sse_comments = sse_comments
        self.azure_filters = azure_filters
        self._lock = threading.Lock()
        self._rules: list[_FaultRule] = []
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self.peak_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task] = set()

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`, what an OpenAI client takes as base_url."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="fake-openai", daemon=True)
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), loop)
        future.result(timeout=10)
        return self

    def stop(self) -> None:
        """Close the listener and every connection (this also releases hung requests)."""
        if self._thread is None or self._loop is None:
            return
        loop = self._loop
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        loop.close()
        self._thread = None
        self._loop = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeOpenAIServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    # -- configuration ------------------------------------------------------------------------

    def inject(
        self,
        fault: Fault | str,
        *,
        times: int | None = 1,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Make the next `times` chat requests (None: all of them) that satisfy `when(request_json)`
        (default: any) fail with `fault`. Rules are tried in the order they were added."""
        if isinstance(fault, str):
            fault = Fault.parse(fault)
        with self._lock:
            self._rules.append(_FaultRule(fault, times, when))

    def clear_faults(self) -> None:
        with self._lock:
            self._rules.clear()

    def enqueue(self, *replies: Reply | str) -> None:
        """Append replies to the scripted queue (replacing a callable script)."""
        with self._lock:
            if not isinstance(self.script, list):
                self.script = []
            self.script.extend(replies)

    # -- observation --------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy of the list; records are live)."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def reset(self) -> None:
        """Forget recorded requests, faults and the peak counter (keeps the script)."""
        with self._lock:
            self._requests.clear()
            self._rules.clear()
            self.peak_in_flight = self._in_flight

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until `count` requests have arrived (for tests that poke a hung request)."""
        deadline = time.monotonic() + timeout
        while len(self._requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self._requests)} of {count} requests arrived")
            time.sleep(0.005)
        return self.requests

    # -- internals: connection handling -------------------------------------------------------

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._on_connection, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:  # keep-alive: one request after another on the same socket
                parsed = await _read_request(reader)
                if parsed is None:
                    break
                if not await self._serve(parsed, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, _ClientGone, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, parsed: _HttpRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; return whether the connection may be reused."""
        body: dict[str, Any] | None = None
        if parsed.body:
            with contextlib.suppress(ValueError):
                loaded = json.loads(parsed.body)
                body = loaded if isinstance(loaded, dict) else None
        headers = dict(parsed.headers)
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        if "authorization" in headers:
            headers["authorization"] = "Bearer <redacted>"
        with self._lock:
            record = RecordedRequest(
                index=len(self._requests),
                method=parsed.method,
                path=parsed.path,
                headers=headers,
                body=body,
                started=time.monotonic(),
                started_wall=time.time(),
                bearer_sha256=hashlib.sha256(bearer.encode()).hexdigest() if bearer else "",
            )
            self._requests.append(record)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        responder = _Responder(writer, record)
        try:
            keep = await self._route(parsed, body, record, responder, reader)
            if record.outcome == "pending":
                record.outcome = "ok" if (record.status or 200) < 400 else "error"
            return keep and not parsed.wants_close
        except (ConnectionError, _ClientGone):
            record.outcome = "client closed"
            raise
        except asyncio.CancelledError:
            if record.outcome == "pending":
                record.outcome = "hung" if record.fault == "hang" else "cancelled"
            raise
        finally:
            record.finished = time.monotonic()
            record.finished_wall = time.time()
            with self._lock:
                self._in_flight -= 1

    async def _route(
        self,
        parsed: _HttpRequest,
        body: dict[str, Any] | None,
        record: RecordedRequest,
        out: _Responder,
        reader: asyncio.StreamReader,
    ) -> bool:
        path = parsed.path.split("?", 1)[0].rstrip("/")
        if self.api_key is not None and parsed.headers.get("authorization") != f"Bearer {self.api_key}":
            given = parsed.headers.get("authorization", "").removeprefix("Bearer ")
            masked = f"{given[:3]}***{given[-4:]}" if len(given) > 8 else "***"
            return await out.error(
                401, f"Incorrect API key provided: {masked}.", "invalid_request_error", "invalid_api_key"
            )
        if parsed.method == "GET" and path == "/v1/models":
            ids = self.models or [DEFAULT_MODEL]
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in ids]
            return await out.json(200, {"object": "list", "data": data})
        if parsed.method != "POST" or path != "/v1/chat/completions":
            return await out.error(404, f"Unknown route {parsed.method} {parsed.path}", "invalid_request_error")
        if body is None:
            return await out.error(400, "The request body is not a JSON object.", "invalid_request_error")
        model = str(body.get("model", ""))
        if self.models is not None and model not in self.models:
            return await out.error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
        refused = self.refused(body)
        if refused is not None:
            return await out.json(400, refused)
        try:
            reply = self._pick_reply(body)
        except Exception as exc:  # a broken script should fail loudly, not hang the test
            return await out.error(500, f"fake server script raised {exc!r}", "server_error")
        plan = _Plan.make(self, body, reply)
        record.fault = plan.fault.kind if plan.fault else None
        if plan.fault and plan.fault.kind == "status":
            extra = {}
            if plan.fault.retry_after is not None:
                extra["Retry-After"] = f"{plan.fault.retry_after:g}"
            kind = "rate_limit_error" if plan.fault.status == 429 else "server_error"
            return await out.error(plan.fault.status, plan.fault.message, kind, headers=extra)
        if plan.fault and plan.fault.kind == "hang" and plan.fault.after == 0:
            await _wait_until_client_leaves(reader)
            record.outcome = "client closed"
            return False
        if body.get("stream"):
            return await plan.stream(out, reader)
        return await plan.respond(out, reader)

    def reasons(self, model: str) -> bool:
        """Whether `model` behaves as one of OpenAI's reasoning models here."""
        chosen = self.openai_reasoning
        return chosen if isinstance(chosen, bool) else model in chosen

    def refused(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """OpenAI's 400 body for the first parameter of the request this model does not take."""
        if self.reasons(str(body.get("model", ""))):
            for param in OPENAI_REASONING_REFUSES:
                value = body.get(param)
                if value is None:
                    continue
                if param in ("temperature", "top_p") and value == 1:
                    continue  # the default is accepted
                return refusal(param, value if param in ("temperature", "top_p") else None)
        for param in self.refuses:
            if body.get(param) is not None:
                return refusal(param)
        return None

    def _pick_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            fault = None
            for rule in self._rules:
                if rule.remaining != 0 and (rule.when is None or rule.when(body)):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    fault = rule.fault
                    break
            self._rules = [r for r in self._rules if r.remaining != 0]
            script = self.script
            queued = script.pop(0) if isinstance(script, list) and script else None
        raw = script(body) if callable(script) else queued
        reply = Reply(text=raw) if isinstance(raw, str) else (raw or Reply())
        if fault is not None:
            reply = Reply(**{**reply.__dict__, "fault": fault})
        return reply


# ---------------------------------------------------------------------------------------------
# internals: HTTP and SSE
# ---------------------------------------------------------------------------------------------


@dataclass
class _HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def wants_close(self) -> bool:
        return self.headers.get("connection", "").lower() == "close"


async def _read_request(reader: asyncio.StreamReader) -> _HttpRequest | None:
    """Read one HTTP/1.1 request (Content-Length bodies only, which is what clients send)."""
    line = await reader.readline()
    if not line.strip():
        return None
    method, target, *_ = line.decode("latin-1").split()
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    body = await reader.readexactly(length) if length else b""
    return _HttpRequest(method.upper(), target, headers, body)


async def _wait_until_client_leaves(reader: asyncio.StreamReader) -> None:
    """Say nothing; return when the client closes (or raise CancelledError at server stop)."""
    while await reader.read(65536):
        pass


class _Responder:
    """Writes responses on one connection and notices when the client has gone."""

    def __init__(self, writer: asyncio.StreamWriter, record: RecordedRequest) -> None:
        self.writer = writer
        self.record = record

    async def _write(self, data: bytes) -> None:
        if self.writer.is_closing():
            raise _ClientGone
        self.writer.write(data)
        try:
            await self.writer.drain()
        except ConnectionError as exc:
            raise _ClientGone from exc

    def _head(self, status: int, headers: dict[str, str]) -> bytes:
        self.record.status = status
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def raw(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> bool:
        head = {"Content-Type": content_type, "Content-Length": str(len(payload)), **(headers or {})}
        await self._write(self._head(status, head) + payload)
        return True

    async def json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> bool:
        return await self.raw(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", headers)

    async def error(
        self,
        status: int,
        message: str,
        kind: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> bool:
        body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        return await self.json(status, body, headers)

    async def start_stream(self) -> None:
        head = {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        await self._write(self._head(200, head))

    async def event(self, data: str) -> None:
        """One SSE event as one HTTP chunk."""
        payload = f"data: {data}\n\n".encode()
        await self._write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

    async def comment(self, text: str) -> None:
        """An SSE comment line (OpenRouter's keep-alive), which clients must skip."""
        payload = f": {text}\n\n".encode()
        await self._write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")

    async def end_stream(self) -> None:
        await self._write(b"0\r\n\r\n")

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


@dataclass
class _Plan:
    """Everything decided about one chat response before the first byte is written."""

    server: FakeOpenAIServer
    body: dict[str, Any]
    reply: Reply
    tokens: list[str]
    finish_reason: str
    fault: Fault | None
    cid: str
    thinking: list[str] = field(default_factory=list)
    style: str = "reasoning_content"

    @classmethod
    def make(cls, server: FakeOpenAIServer, body: dict[str, Any], reply: Reply) -> _Plan:
        fault = reply.fault
        text = reply.text if reply.text is not None else default_reply(body)
        if fault and fault.kind in ("long", "flood"):
            base = tokenize(text + " ")
            tokens = (base * (fault.tokens // max(1, len(base)) + 1))[: fault.tokens]
        elif fault and fault.kind == "empty":
            tokens = []
        elif reply.chunks is not None:
            tokens = list(reply.chunks)
        else:
            tokens = tokenize(text)
        finish = reply.finish_reason
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        joined = "".join(tokens)
        cut = min((joined.find(s) for s in stops if s and s in joined), default=-1)
        if cut >= 0:
            tokens, finish = tokenize(joined[:cut]), "stop"
        style = reply.thinking_as or server.thinking_as
        thinking = tokenize(reply.thinking) if reply.thinking else []
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if isinstance(limit, int) and thinking and len(thinking) >= limit:
            thinking, tokens, finish = thinking[:limit], [], "length"  # the thinking ate the budget
            closed = False
        else:
            closed = True
            if isinstance(limit, int) and len(thinking) + len(tokens) > limit and not (fault and fault.kind == "flood"):
                tokens, finish = tokens[: limit - len(thinking)], "length"
        if thinking and style in ("tags", "open"):
            opened = ["<think>"] if style == "tags" else []
            tokens = [*opened, *thinking, *(["</think>", "\n\n"] if closed else []), *tokens]
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
        return cls(server, body, reply, tokens, finish, fault, f"chatcmpl-fake{digest}", thinking, style)

    @property
    def delay(self) -> float:
        return self.reply.token_delay if self.reply.token_delay is not None else self.server.token_delay

    def _usage(self, sent: int) -> dict[str, Any]:
        prompt = self.reply.prompt_tokens
        if prompt is None:
            prompt = estimate_messages_tokens(
                [
                    {"role": str(m.get("role")), "content": _content_text(m.get("content"))}
                    for m in self.body.get("messages") or []
                ]
            )
        reasoning = self.reply.reasoning_tokens if self.reply.reasoning_tokens is not None else len(self.thinking)
        fields = self.style in ("reasoning_content", "reasoning", "hidden")
        # Thinking in the content is already among the `sent` tokens; in its own field it is not.
        completion = self.reply.completion_tokens
        if completion is None:
            completion = sent + (len(self.thinking) if fields else 0)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if self.thinking or self.reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return usage

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, *, usage: bool, choices: bool = True) -> str:
        chunk: dict[str, Any] = {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.body.get("model", DEFAULT_MODEL),
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
            "agora_sent_at": time.monotonic(),
        }
        if usage:
            chunk["usage"] = None
        return json.dumps(chunk, ensure_ascii=False)

    async def stream(self, out: _Responder, reader: asyncio.StreamReader) -> bool:
        record = out.record
        options = self.body.get("stream_options") or {}
        usage = bool(options.get("include_usage")) and self.server.send_usage and self.reply.usage
        fault = self.fault
        strike_at = fault.after if fault and fault.kind in ("hang", "disconnect", "malformed") else None

        await out.start_stream()
        if self.server.sse_comments:
            await out.comment("OPENROUTER PROCESSING")
        if self.server.azure_filters:
            await out.event(
                json.dumps(
                    {
                        "choices": [],
                        "created": 0,
                        "id": "",
                        "model": "",
                        "object": "",
                        "prompt_filter_results": [
                            {
                                "prompt_index": 0,
                                "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
                            }
                        ],
                    }
                )
            )
        await out.event(self._chunk({"role": "assistant", "content": "", "refusal": None}, usage=usage))
        if self.style in ("reasoning_content", "reasoning"):
            for i, piece in enumerate(self.thinking):
                if i and self.delay:
                    await asyncio.sleep(self.delay)
                delta = {"content": None, "reasoning_content": piece}
                if self.style == "reasoning":  # OpenRouter / Ollama: an empty content beside it
                    delta = {"content": "", "reasoning": piece}
                await out.event(self._chunk(delta, usage=usage))
                record.thinking.append(piece)
        if self.server.sse_comments:
            await out.comment("OPENROUTER PROCESSING")
        if fault and fault.kind == "trickle":
            while True:  # ends when the client leaves (the write fails) or the server stops
                await asyncio.sleep(fault.interval)
                await out.event(self._chunk({"content": ""}, usage=usage))
        if self.reply.first_token_delay:
            await asyncio.sleep(self.reply.first_token_delay)
        for i, token in enumerate(self.tokens):
            if strike_at is not None and i == strike_at:
                return await self._strike(out, reader)
            if i and self.delay:
                await asyncio.sleep(self.delay)
            await out.event(self._chunk({"content": token}, usage=usage))
            record.tokens.append(token)
            record.token_times.append(time.monotonic())
        if strike_at is not None:  # the reply was shorter than `after`: strike at the end
            return await self._strike(out, reader)
        await out.event(self._chunk({}, self.finish_reason, usage=usage))
        if usage:
            await out.event(
                json.dumps(
                    {
                        "id": self.cid,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": self.body.get("model", DEFAULT_MODEL),
                        "choices": [],
                        "usage": self._usage(len(record.tokens)),
                        "agora_sent_at": time.monotonic(),
                    }
                )
            )
        # [DONE] and the end of the chunked body go out together, so `finished` is recorded before
        # the client can see the end of the response (keeps overlap measurements honest).
        payload = b"data: [DONE]\n\n"
        await out._write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n")
        return True

    async def _strike(self, out: _Responder, reader: asyncio.StreamReader) -> bool:
        assert self.fault is not None
        kind = self.fault.kind
        if kind == "hang":
            await _wait_until_client_leaves(reader)
            out.record.outcome = "client closed"
            return False
        if kind == "malformed":
            await out.event('{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "oops"')
            await out.end_stream()
            return True
        out.record.outcome = "disconnected"
        await out.close()
        return False

    def _message(self, text: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if self.thinking and self.style in ("reasoning_content", "reasoning"):
            message[self.style] = "".join(self.thinking)
        return message

    async def respond(self, out: _Responder, reader: asyncio.StreamReader) -> bool:
        """A non-streaming answer: the whole text after `token_delay * tokens` seconds."""
        fault = self.fault
        if fault and fault.kind == "hang":
            await _wait_until_client_leaves(reader)
            out.record.outcome = "client closed"
            return False
        if fault and fault.kind == "disconnect":
            out.record.outcome = "disconnected"
            await out.close()
            return False
        if fault and fault.kind == "malformed":
            return await out.raw(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
        await asyncio.sleep(self.reply.first_token_delay + self.delay * len(self.tokens))
        out.record.tokens.extend(self.tokens)
        out.record.token_times.extend([time.monotonic()] * len(self.tokens))
        text = "".join(self.tokens)
        return await out.json(
            200,
            {
                "id": self.cid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.body.get("model", DEFAULT_MODEL),
                "system_fingerprint": "fp_fake",
                "choices": [
                    {
                        "index": 0,
                        "message": self._message(text),
                        "logprobs": None,
                        "finish_reason": self.finish_reason,
                    }
                ],
                "usage": self._usage(len(self.tokens)),
            },
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible API until Ctrl-C.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--token-delay", type=float, default=0.02, help="seconds between tokens")
    parser.add_argument("--api-key", default=None, help="require this bearer token")
    parser.add_argument("--model", action="append", dest="models", help="accepted model ids (repeatable)")
    parser.add_argument(
        "--fault", action="append", default=[], help="apply to every request, e.g. 429:1, hang, disconnect:3"
    )
    parser.add_argument(
        "--openai-reasoning", action="store_true", help="refuse max_tokens, temperature and stop as o4-mini does"
    )
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        token_delay=args.token_delay,
        api_key=args.api_key,
        models=args.models,
        host=args.host,
        port=args.port,
        openai_reasoning=args.openai_reasoning,
    )
    for spec in args.fault:
        server.inject(spec, times=None)
    with server:
        print(f"fake OpenAI server at {server.base_url}  (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
