"""A provider for any OpenAI-compatible chat server (OpenAI, vLLM, llama.cpp, Ollama, LM Studio...).

Built on the official `openai` SDK with the SDK's own retries turned off: we retry ourselves so that
(1) text already shown to the user is never streamed twice -- a failure after the first delta is
raised with `partial_text` instead of retried -- and (2) `Completion.attempts` says how many tries
it took. Every SDK / transport error is mapped to a `ProviderError` whose message tells the user
what happened and what to change: the HTTP status and the kind of failure, never the server's own
words (whoever sets a provider's base URL could point it at any service and read its replies on
a page; what the server said is logged, for the operator). The API key never appears in
messages, logs or reprs.

Timeouts, all in seconds:
  timeout              the SDK's connect/read/write timeout for one HTTP operation.
  request_timeout      total-silence limit: the longest wait for the response to start or for the
                       next chunk (default: `timeout`). A server that accepts and never answers
                       fails with ProviderTimeout after this long, per attempt.
  first_token_timeout  optional limit from sending the request to the first text delta (covers
                       slow prompt processing even when the server sends keep-alive chunks).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import random
import re
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import openai

from . import transport
from .base import (
    BadResponse,
    ChatStream,
    Completion,
    ConnectionLost,
    LLMClient,
    Message,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    ServerError,
    ThinkingCallback,
    estimate_messages_tokens,
    estimate_tokens,
)
from .reasoning import is_openai_reasoning, is_reasoning_model, with_headroom
from .silence import SilenceWatch
from .thinking import ThinkSplitter

log = logging.getLogger(__name__)

_NO_KEY = "no-key"  # local servers need none, but the SDK insists on some string
# What a model id looks like (OpenAI, Ollama "llama3.1:8b", Hugging Face "org/name", OpenRouter):
# anything else in a model list is not offered.
MODEL_ID = re.compile(r"[A-Za-z0-9][\w.:/@+-]{0,119}")
MAX_MODELS = 1000


def _display_url(url: str) -> str:
    """The base URL without any `user:password@` part, for messages."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts).rstrip("/")


def _retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms` / `Retry-After` (seconds or an HTTP date), if present."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        with contextlib.suppress(ValueError):
            return max(0.0, float(raw_ms) / 1000)
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(raw)
        return max(0.0, when.timestamp() - time.time())
    return None


def _server_message(err: openai.APIError) -> str:
    """The server's own error text, shortened; empty if it sent none."""
    body = err.body
    message = ""
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = str(inner.get("message", "")) if isinstance(inner, dict) else str(inner)
    elif isinstance(body, str):
        message = body
    message = " ".join(message.split())
    return message[:300]


# The parameters a 400 may teach the client to rename or leave out: never the model, the messages
# or a grammar. OpenAI names the one it refuses in `param`, with `code` "unsupported_parameter"
# (e.g. max_tokens: "Use 'max_completion_tokens' instead", stop) or "unsupported_value" (a
# temperature but the default); other servers only say it in the message.
LEARNABLE = frozenset(
    {"max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "reasoning_effort", "stream_options"}
)
RENAMES = {"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}
_REFUSAL = re.compile(
    r"(unsupported (?:parameter|value)|unrecognized request argument(?: supplied)?|unknown parameter)\W+(\w+)", re.I
)


def _refused_param(body: Any) -> tuple[str, str] | None:
    """(parameter, "parameter" | "value") when a 400's body says the model does not take one of
    the LEARNABLE parameters, else None. Reads OpenAI's error object (`param`, `code`), then
    the message's own words."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        return None
    code = str(inner.get("code") or "").lower()
    param = inner.get("param")
    if code in ("unsupported_parameter", "unsupported_value") and param in LEARNABLE:
        return str(param), "value" if code == "unsupported_value" else "parameter"
    found = _REFUSAL.search(str(inner.get("message") or ""))
    if found and found.group(2) in LEARNABLE:
        return found.group(2), "value" if "value" in found.group(1).lower() else "parameter"
    return None


def _reasoning_tokens(usage: Any) -> int | None:
    """`usage.completion_tokens_details.reasoning_tokens`, when the server sends it."""
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    value = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return int(value) if isinstance(value, int | float) and value >= 0 else None


def _unreported_thinking(usage: dict) -> int:
    """Tokens `total_tokens` counts beyond prompt + completion when no breakdown came: a server that
    leaves its thinking out of `completion_tokens` (Gemini's OpenAI-compatible endpoint) still
    counts it in the total. Anything else (a total that is just the sum, or none) gives 0."""
    try:
        total, prompt, output = (int(usage.get(k) or 0) for k in ("total_tokens", "prompt_tokens", "completion_tokens"))
    except (TypeError, ValueError):
        return 0
    return max(0, total - prompt - output) if total else 0


class _Refused(ProviderError):
    """A 400 that names a parameter the model does not take (`kind`: the parameter itself, or
    the value sent): the client learns it and sends the request again without it."""

    def __init__(self, message: str, *, param: str, kind: str) -> None:
        super().__init__(message)
        self.param = param
        self.kind = kind


class ThinkingExhausted(BadResponse):
    """The reply is empty because the thinking used up the whole token allowance
    (finish_reason "length"): the same request would fail alike, so it is not retried."""

    retryable = False


@dataclass
class _Call:
    """One `stream()` call: what the caller asked for, the same for every attempt."""

    messages: list[Message]
    max_tokens: int | None
    stop: list[str] | None
    temperature: float | None
    extra: dict[str, Any] | None
    on_thinking: ThinkingCallback | None
    thinking_shown: bool = False

    def think(self, piece: str) -> None:
        if self.on_thinking is not None:
            self.thinking_shown = True
            self.on_thinking(piece)


class _Silence(Exception):
    """Raised inside an attempt when a wait ran past its deadline; `label` says which."""

    def __init__(self, label: str, seconds: float) -> None:
        super().__init__(label)
        self.label = label
        self.seconds = seconds


# One SDK client per (event loop, server, key, timeout), shared by every debate that calls it: a
# client per debate cost a TLS context and a connection pool each (5% of the web process's CPU
# while 100 debates started, bench/README.md), and kept no connection warm between debates. httpx
# pools belong to the loop that made them, hence the loop in the key.
_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, openai.AsyncOpenAI]] = (
    weakref.WeakKeyDictionary()
)


def load_http_stack() -> None:
    """Build and drop one SDK client: the SDK imports its HTTP transport and its chat resources on
    first use, which would otherwise happen on the event loop mid-debate (see `debates.warm`)."""
    client = openai.AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1", api_key=_NO_KEY, max_retries=0, http_client=transport.http_client()
    )
    client.chat.completions.with_streaming_response  # noqa: B018 - the attribute imports the resources


class OpenAICompatibleClient(LLMClient):
    """Streams chat completions from an OpenAI-compatible server. See the module docstring.

    The engine bounds parallel calls with `self.limiter` (sized by `concurrency`); this class only
    streams, retries and maps errors.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        name: str = "openai",
        concurrency: int = 4,
        timeout: float = 120,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        max_retry_after: float = 60.0,
        request_timeout: float | None = None,
        first_token_timeout: float | None = None,
        streams_usage: bool = True,
        context_window: int | None = None,
        key_env: str = "OPENAI_API_KEY",
        model_env: str = "AGORA_MODEL",
        reasoning_effort: str | None = None,
        learnt: dict[str, str | None] | None = None,
        on_learn: Callable[[dict[str, str | None]], None] | None = None,
    ) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = name
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self.request_timeout = request_timeout if request_timeout is not None else timeout
        self.first_token_timeout = first_token_timeout
        self.streams_usage = streams_usage
        self.context_window = context_window
        self.key_env = key_env
        self.model_env = model_env
        self.reasoning_effort = reasoning_effort or None
        self.learnt: dict[str, str | None] = dict(learnt or {})
        self.on_learn = on_learn
        self._seen_thinking = False  # a reply of this client carried thinking
        self._bare_close = False  # a reply closed thinking it never opened
        self.__api_key = api_key or ""

    def __repr__(self) -> str:
        return f"OpenAICompatibleClient(name={self.name!r}, base_url={self.url!r}, model={self.model!r})"

    @property
    def url(self) -> str:
        """The base URL as shown to users (credentials stripped)."""
        return _display_url(self.base_url)

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client of this server, shared by every debate on this loop (see `_shared`)."""
        loop = asyncio.get_running_loop()
        clients = _shared.setdefault(loop, {})
        key = (self.base_url, self.__api_key, self.timeout)
        client = clients.get(key)
        if client is None:
            client = openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self.__api_key or _NO_KEY,
                # Every read is bounded here (`SilenceWatch`), not by httpx: see transport.py.
                timeout=httpx2.Timeout(self.timeout, read=None),
                http_client=transport.http_client(),
                max_retries=0,
            )
            clients[key] = client
        return client

    async def aclose(self) -> None:
        """Nothing to close per debate: the SDK client (its connection pool) is shared by every
        debate that calls the same server, and closes with its loop."""

    # -- the call -------------------------------------------------------------------------------

    @property
    def reasons(self) -> bool:
        """Whether this model thinks before it answers: known by its name, taught by the server
        (it wanted `max_completion_tokens`), or seen thinking in an earlier reply of this client."""
        return (
            is_reasoning_model(self.model)
            or self.learnt.get("max_tokens") == "max_completion_tokens"
            or self._seen_thinking
        )

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        temperature: float | None = None,
        extra: dict[str, Any] | None = None,
        key: str | None = None,
        on_thinking: ThinkingCallback | None = None,
    ) -> ChatStream:
        call = _Call(list(messages), max_tokens, list(stop) if stop else None, temperature, extra, on_thinking)
        completion = Completion()
        return ChatStream(deltas=self._with_retries(call, completion), completion=completion)

    def completion_limit(self, messages: Sequence[Message], max_tokens: int, *, key: str | None = None) -> int:
        """The limit a request for `max_tokens` of answer carries: a reasoning model's thinking
        counts against the same limit, so it gets room (within the context window, when known)."""
        if not self.reasons:
            return max_tokens
        limit = with_headroom(max_tokens)
        if self.context_window:
            room = self.context_window - estimate_messages_tokens(messages) - 16
            limit = max(max_tokens, min(limit, room))
        return limit

    def _body(self, call: _Call) -> dict[str, Any]:
        """The request's fields besides the model, the messages and `stream`, in the shape this
        model takes (see `debates.providers.reasoning`), with what the server refused before
        renamed or dropped (`learnt`)."""
        openai_style = is_openai_reasoning(self.model)
        reasoning = self.reasons
        body: dict[str, Any] = {}
        if self.streams_usage:
            body["stream_options"] = {"include_usage": True}
        if call.max_tokens is not None:
            limit = self.completion_limit(call.messages, call.max_tokens)
            body["max_completion_tokens" if openai_style else "max_tokens"] = limit
        if call.stop and not reasoning:  # a stop sequence could match inside the thinking
            body["stop"] = list(call.stop)
        if call.temperature is not None and not openai_style:
            body["temperature"] = call.temperature
        if self.reasoning_effort:
            body["reasoning_effort"] = self.reasoning_effort
        if call.extra:
            body.update(call.extra)
        for name in [n for n in body if n in self.learnt]:
            value, seen, target = body.pop(name), set(), name
            while target is not None and target in self.learnt and target not in seen:
                seen.add(target)
                target = self.learnt[target]  # renamed (maybe again), or None: left out
            if target is not None and target not in seen and target not in body:
                body[target] = value
        return body

    def _learn(self, refused: _Refused, sent: dict[str, Any]) -> bool:
        """Remember what the server refused (renamed or dropped from now on); true if it is new.
        `on_learn` hears the whole updated dict, so the next client starts knowing it."""
        param = refused.param
        if param not in sent or param in self.learnt:
            return False
        rename = RENAMES.get(param) if refused.kind == "parameter" else None
        if param in RENAMES and rename is None:
            return False  # a limit with a value it refused (too large): not a shape to learn
        if rename is not None and rename in self.learnt:
            rename = None  # the other name was refused too: send no limit at all
        self.learnt[param] = rename
        log.info(
            "%s at %s refused %r: %s from now on",
            self.describe(),
            self.url,
            param,
            f"sending {rename!r} instead" if rename else "leaving it out",
        )
        if self.on_learn is not None:
            try:
                self.on_learn(dict(self.learnt))
            except Exception:
                log.exception("%s: on_learn failed", self.describe())
        return True

    async def _with_retries(self, call: _Call, completion: Completion) -> AsyncIterator[str]:
        attempt = 0
        learnt = 0  # immediate retries after a 400 taught the request's shape
        while True:
            attempt += 1
            completion.attempts = attempt
            body = self._body(call)
            streamed: list[str] = []
            try:
                async with contextlib.aclosing(self._attempt(call, body, completion)) as deltas:
                    async for delta in deltas:
                        streamed.append(delta)  # `completion.text` is set whole once the reply ends
                        yield delta
                return
            except ProviderError as err:
                if streamed or call.thinking_shown:
                    # the consumer already has this text (or thinking): never replay it
                    err.partial_text = "".join(streamed)
                    err.partial_thinking = completion.thinking
                    raise
                if isinstance(err, _Refused) and learnt < len(LEARNABLE):
                    if self._learn(err, body) or self._body(call) != body:
                        learnt += 1
                        continue  # at once: the same request in the shape the server takes
                delay = self._retry_delay(err, attempt - learnt)
                if delay is None:
                    raise
                log.warning(
                    "%s: attempt %d/%d failed (%s: %s); retrying in %.2f s",
                    self.describe(),
                    attempt - learnt,
                    self.max_retries + 1,
                    type(err).__name__,
                    err,
                    delay,
                )
                await asyncio.sleep(delay)

    def _retry_delay(self, err: ProviderError, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if not err.retryable or attempt > self.max_retries:
            return None
        backoff = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        backoff *= 0.5 + random.random() / 2  # jitter, so parallel callers do not retry in step
        if err.retry_after is not None:
            if err.retry_after > self.max_retry_after:
                return None
            return max(backoff, err.retry_after)
        return backoff

    async def _attempt(self, call: _Call, body: dict[str, Any], completion: Completion) -> AsyncIterator[str]:
        """One HTTP request: yields answer deltas, hands thinking to `call.think`, fills
        `completion`, raises only ProviderError."""
        loop = asyncio.get_running_loop()
        first_deadline = loop.time() + self.first_token_timeout if self.first_token_timeout is not None else None
        got_token = False  # of either kind: thinking ends the first-token wait too

        def limit() -> tuple[float, str]:
            silence = (self.request_timeout, "silence")
            if first_deadline is None or got_token:
                return silence
            left = first_deadline - loop.time()
            return (left, "first") if left < silence[0] else silence

        watch = SilenceWatch()  # one timer for the stream's reads, not one per token

        async def bounded(awaitable: Any) -> Any:
            seconds, label = limit()
            try:
                return await watch.bounded(awaitable, seconds)
            except TimeoutError as exc:
                full = self.first_token_timeout if label == "first" else self.request_timeout
                raise _Silence(label, full or seconds) from exc

        text: list[str] = []
        thinking: list[str] = []
        splitter: ThinkSplitter | None = None
        usage = None
        finish_reason = None

        def think(piece: str) -> None:
            thinking.append(piece)
            call.think(piece)

        try:
            # The raw event stream, not the SDK's typed one: building a ChatCompletionChunk model
            # per token cost ~144 µs of CPU against ~26 µs for the lines and json.loads
            # (bench/stream_parse.py), at 100 debates a tenth of the web process's CPU. The SDK
            # still sends the request, raises status errors and owns the connection pool.
            manager = self._client().chat.completions.with_streaming_response.create(
                model=self.model, messages=call.messages, stream=True, extra_body=body
            )
            response = await bounded(manager.__aenter__())
            try:
                kind = response.headers.get("content-type", "")
                if kind and "event-stream" not in kind:
                    # A page, or a reply that is not a stream: whatever it says is not a model's.
                    log.warning("%s at %s: the chat reply is %s, not an event stream", self.describe(), self.url, kind)
                    raise ProviderUnavailable(
                        f"{self.url} did not answer with an OpenAI-compatible stream (model {self.model}): check "
                        "the base URL (it usually ends in /v1)"
                    )
                events = _events(response.iter_lines()).__aiter__()
                while True:
                    try:
                        data = await bounded(anext(events))
                    except StopAsyncIteration:
                        break
                    if data == "[DONE]":
                        break
                    chunk = json.loads(data)
                    if not isinstance(chunk, dict):
                        raise ValueError("a stream chunk that is not a JSON object")
                    if chunk.get("error"):
                        raise _stream_error(chunk["error"], response.http_response.request)
                    if chunk.get("usage") is not None:
                        usage = chunk["usage"]
                    # Azure's first chunk (prompt_filter_results) and the usage chunk have no choices.
                    for choice in chunk.get("choices") or []:
                        if choice.get("finish_reason"):
                            finish_reason = choice["finish_reason"]
                        delta = choice.get("delta") or {}
                        # DeepSeek, vLLM and llama.cpp: reasoning_content; OpenRouter, Ollama and
                        # newer vLLM: reasoning (some send both, alike: one is read).
                        reasoning = delta.get("reasoning_content")
                        if not isinstance(reasoning, str) or not reasoning:
                            reasoning = delta.get("reasoning")
                        if isinstance(reasoning, str) and reasoning:
                            got_token = True
                            think(reasoning)
                        piece = delta.get("content")
                        if not isinstance(piece, str) or not piece:
                            continue
                        got_token = True
                        if splitter is None:
                            splitter = ThinkSplitter(implicit=self._thinks_implicitly() and not thinking)
                        for is_thinking, part in splitter.feed(piece):
                            if is_thinking:
                                think(part)
                            else:
                                text.append(part)
                                yield part
                if splitter is not None:
                    for is_thinking, part in splitter.close(truncated=finish_reason == "length"):
                        if is_thinking:
                            think(part)
                        else:
                            text.append(part)
                            yield part
                    if splitter.bare_close and not self._bare_close:
                        self._bare_close = True  # the next reply starts inside its thinking
                        log.warning(
                            "%s: the reply closed thinking it never opened (</think>); the text before it was "
                            "taken for the answer, later replies hold it back until </think>",
                            self.describe(),
                        )
            finally:
                watch.close()
                completion.thinking = "".join(thinking).strip()
                with contextlib.suppress(Exception):
                    await manager.__aexit__(None, None, None)
        except ProviderError:
            raise
        except Exception as exc:
            raise self._map_error(exc) from self._scrubbed(exc)

        if thinking:
            self._seen_thinking = True
        if finish_reason is None:
            raise ConnectionLost(
                f"{self.url} ended the stream before the reply was finished (model {self.model}); "
                "the server may have restarted or a proxy cut the connection"
            )
        reasoning_tokens = _reasoning_tokens(usage)
        if not text:
            if finish_reason == "length" and (thinking or reasoning_tokens):
                limit_sent = body.get("max_completion_tokens", body.get("max_tokens"))
                allowance = f" ({limit_sent} tokens)" if isinstance(limit_sent, int) else ""
                raise ThinkingExhausted(
                    f"model {self.model} on {self.url} spent the turn's whole token allowance{allowance} on its "
                    "thinking and wrote no answer (finish_reason=length): raise the turn's token allowance, "
                    "or lower the reasoning effort"
                )
            only = " (only thinking)" if thinking else ""
            raise BadResponse(
                f"model {self.model} on {self.url} returned an empty reply{only} (finish_reason={finish_reason}); "
                "try again, raise max_tokens, or choose another model"
            )
        reply = "".join(text)
        completion.text = reply
        completion.finish_reason = finish_reason
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            completion.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion.completion_tokens = int(usage.get("completion_tokens") or 0)
            completion.usage_estimated = False
            hidden = _unreported_thinking(usage) if reasoning_tokens is None else 0
            if hidden:
                # Gemini's endpoint counts its thinking only in total_tokens: output it is, and paid as such
                completion.completion_tokens += hidden
                reasoning_tokens = hidden
            if reasoning_tokens is None and completion.thinking:
                # no breakdown: the thinking's share, estimated, within the server's total
                reasoning_tokens = min(estimate_tokens(completion.thinking), completion.completion_tokens)
        else:
            completion.prompt_tokens = estimate_messages_tokens(call.messages)
            completion.completion_tokens = estimate_tokens(reply) + estimate_tokens(completion.thinking)
            completion.usage_estimated = True
            if reasoning_tokens is None:
                reasoning_tokens = estimate_tokens(completion.thinking) if completion.thinking else 0
        completion.reasoning_tokens = reasoning_tokens or 0

    def _thinks_implicitly(self) -> bool:
        """Whether this model's content may start inside thinking the prompt opened (only
        `</think>` comes): R1 distills and other reasoning models not from OpenAI (whose thinking
        never reaches the content), and any model seen closing thinking it never opened."""
        return self._bare_close or (is_reasoning_model(self.model) and not is_openai_reasoning(self.model))

    async def list_models(self) -> list[str]:
        """The model ids the server offers (GET /models), for "Fetch models" and provider
        detection; a failure is a ProviderError that says what to fix. Only ids that look like
        model names are kept (at most MAX_MODELS)."""
        try:
            async with asyncio.timeout(self.request_timeout):
                page = await self._client().models.list()
        except TimeoutError as exc:
            raise self._map_error(_Silence("silence", self.request_timeout)) from exc
        except ProviderError:
            raise
        except (openai.APIError, httpx2.HTTPError, OSError) as exc:
            raise self._map_error(exc) from self._scrubbed(exc)
        except Exception as exc:  # the SDK could not read the reply as a list of models
            raise self._not_a_model_list(type(exc).__name__) from self._scrubbed(exc)
        data = getattr(page, "data", None)
        if not isinstance(data, list):
            raise self._not_a_model_list("no data list")
        ids = {getattr(item, "id", None) for item in data}
        models = sorted(i for i in ids if isinstance(i, str) and MODEL_ID.fullmatch(i))
        if data and not models:
            raise self._not_a_model_list("no model ids")
        if len(models) < len(ids):
            skipped = len(ids) - len(models)
            log.warning("%s: %d entries of its model list skipped (no model id)", self.describe(), skipped)
        return models[:MAX_MODELS]

    def _not_a_model_list(self, why: str) -> BadResponse:
        log.warning("%s: GET /models did not answer a model list (%s)", self.describe(), why)
        return BadResponse(
            f"{self.url} did not answer with an OpenAI-compatible model list (GET /models): "
            "check the base URL (it usually ends in /v1)"
        )

    # -- errors ---------------------------------------------------------------------------------

    def _map_error(self, exc: BaseException) -> ProviderError:
        """Translate an SDK/transport error into a ProviderError with a message that names the fix."""
        url, model = self.url, self.model
        if isinstance(exc, _Silence):
            if exc.label == "first":
                return ProviderTimeout(
                    f"no first token from {url} within {exc.seconds:g} s (model {model}): the server may be "
                    "overloaded or the prompt too long; raise first_token_timeout or use a faster model"
                )
            return ProviderTimeout(
                f"no answer from {url} within {exc.seconds:g} s (model {model}): the server may be stuck or "
                "overloaded; check it, or raise the provider's timeout"
            )
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            return ProviderTimeout(
                f"no answer from {url} within {self.timeout:g} s (model {model}): the server may be stuck or "
                "overloaded; check it, or raise the provider's timeout"
            )
        if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            # The SDK wraps transport errors of the request; those of the stream arrive as they are.
            if isinstance(exc, httpx2.ConnectError) or isinstance(exc.__cause__, httpx2.ConnectError):
                return ProviderUnavailable(
                    f"cannot reach {url}: is the server running? Check the base URL and port "
                    "(and that it usually ends in /v1)"
                )
            return ConnectionLost(
                f"the connection to {url} dropped during the reply (model {model}); "
                "the server may have restarted or a proxy cut the connection"
            )
        if isinstance(exc, openai.APIStatusError):
            return self._map_status(exc)
        if isinstance(exc, openai.APIError):  # an error event inside the stream
            self._log_said(f"an error event during the reply (model {model})", _server_message(exc) or exc.message)
            return ServerError(
                f"{url} reported an error during the reply (model {model}); try again later or check the server's logs"
            )
        if isinstance(exc, ValueError | UnicodeDecodeError | json.JSONDecodeError | KeyError | TypeError):
            return BadResponse(
                f"{url} sent a malformed stream chunk (model {model}); is it really OpenAI-compatible? "
                "Try again, or check the server's version and logs"
            )
        if isinstance(exc, httpx2.HTTPError | OSError):
            return ConnectionLost(f"the connection to {url} failed ({type(exc).__name__}); try again")
        self._log_said(f"an unexpected failure (model {model}, {type(exc).__name__})", str(exc))
        return ProviderError(f"unexpected failure talking to {url} (model {model}): {type(exc).__name__}")

    def _map_status(self, exc: openai.APIStatusError) -> ProviderError:
        """The status and what to change; what the server said goes to the log only."""
        url, model, status = self.url, self.model, exc.status_code
        self._log_said(f"HTTP {status} (model {model})", _server_message(exc))
        if status == 401:
            return ProviderUnavailable(
                f"the server refused the API key: set {self.key_env} (or the provider's key variable) "
                f"to a valid key for {url}"
            )
        if status == 403:
            return ProviderUnavailable(
                f"{url} denied access to model {model} (HTTP 403): check that the key in {self.key_env} "
                f"may use this model, or set {self.model_env} to one it may use"
            )
        if status == 404:
            return ProviderUnavailable(
                f"model {model} not found on {url}: set {self.model_env} to a model the server offers "
                f"(GET {url}/models lists them), and check that the base URL is right"
            )
        if status == 429:
            wait = _retry_after(exc.response.headers)
            hint = f" after {wait:g} s" if wait is not None else " in a moment"
            return RateLimited(
                f"{url} is rate-limiting requests (HTTP 429); try again{hint}, or lower the provider's concurrency",
                retry_after=wait,
            )
        if status >= 500 or status in (408, 409):
            return ServerError(
                f"{url} had an internal error (HTTP {status}, model {model}); try again later or check "
                "the server's logs",
                retry_after=_retry_after(exc.response.headers),
            )
        refused = _refused_param(exc.body) if status in (400, 422) else None
        if refused is not None:
            param, kind = refused
            return _Refused(
                f"{url} rejected the request (HTTP {status}, model {model}): the model does not take the "
                f"parameter {param}",
                param=param,
                kind=kind,
            )
        return ProviderError(
            f"{url} rejected the request (HTTP {status}, model {model}): the prompt may be too long for "
            "the model or a parameter unsupported"
        )

    def _log_said(self, what: str, said: str) -> None:
        """What the server said about a failure: for the operator's log (key redacted), never for a
        message a page shows."""
        said = self._redact(" ".join((said or "").split()))[:300]
        if said:
            log.warning("%s at %s: %s; the server said: %s", self.describe(), self.url, what, said)

    def _redact(self, text: str) -> str:
        key = self.__api_key
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return text

    def _scrubbed(self, exc: Exception) -> Exception:
        """The SDK's error quotes the server's reply verbatim, and a server may echo the key back:
        it stays chained to ours (tracebacks show it in any log) with the key redacted."""
        exc.args = tuple(self._redact(a) if isinstance(a, str) else a for a in exc.args)
        if isinstance(getattr(exc, "message", None), str):
            exc.message = self._redact(exc.message)
        return exc


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Server-Sent Events' data, one string per event: `data:` lines joined by newlines until a
    blank line (the SSE rule; OpenAI-compatible servers send one line per event), comments and
    other fields skipped."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
    if data:
        yield "\n".join(data)


def _stream_error(error, request) -> openai.APIError:
    """An error event inside the stream, as the SDK itself raises it."""
    message = error.get("message") if isinstance(error, dict) else None
    return openai.APIError(message or "An error occurred during streaming", request, body=error)
