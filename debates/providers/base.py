"""The provider interface: one async streaming method and a few capability attributes.

The engine sees only this module. Every concrete provider (OpenAI-compatible servers, the bundled
local model, the in-process fake used by engine tests) implements `LLMClient.stream`.
No Django imports here: the engine must run without the web layer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}
ThinkingCallback = Callable[[str], None]  # called synchronously with each piece of thinking


class ProviderError(Exception):
    """A failed LLM call. `str(error)` is written for the user: what happened and what to do.

    `retryable` says whether the same request may succeed later (429, 5xx, dropped connection);
    `partial_text` keeps whatever streamed before the failure so nothing is lost (and
    `partial_thinking` the thinking that streamed).
    """

    retryable = False

    def __init__(self, message: str, *, partial_text: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.partial_text = partial_text
        self.partial_thinking = ""  # the thinking that streamed before the failure, if any
        self.retry_after = retry_after


class RateLimited(ProviderError):
    retryable = True


class ServerError(ProviderError):
    retryable = True


class ConnectionLost(ProviderError):
    retryable = True


class ProviderTimeout(ProviderError):
    retryable = True


class ProviderUnavailable(ProviderError):
    """Misconfigured or down: retrying will not help until the user fixes something."""


class ThinkingLooped(ProviderError):
    """The model's thinking went round in a loop, so the call was stopped there (a small reasoning
    model can think the same passage until its deadline and never answer). Raised by whoever
    watches the thinking, from inside the client's `on_thinking` callback; retrying the same
    request would most likely loop again."""


class BadResponse(ProviderError):
    """The server answered, but not with something we can use (malformed chunk, empty reply)."""

    retryable = True


@dataclass
class Completion:
    """What one call produced. Token counts come from the server's usage when it sends them;
    otherwise they are estimated and `usage_estimated` says so.

    `thinking` is a reasoning model's thinking (`delta.reasoning_content`, `delta.reasoning`, or
    `<think>...</think>` split out of the content): never part of `text`. `completion_tokens`
    keeps the server's meaning and includes the thinking's tokens; `reasoning_tokens` says how
    many of them were thinking (the server's `completion_tokens_details.reasoning_tokens`, else
    estimated from `thinking`)."""

    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False
    finish_reason: str | None = None
    attempts: int = 1
    thinking: str = ""
    reasoning_tokens: int = 0


@dataclass
class ChatStream:
    """An async iterator of text deltas; `completion` is complete once iteration ends."""

    deltas: AsyncIterator[str]
    completion: Completion = field(default_factory=Completion)

    def __aiter__(self) -> AsyncIterator[str]:
        return self.deltas


def estimate_tokens(text: str) -> int:
    """A rough, honest estimate for servers that send no usage: CJK characters count one token
    each, other text about four characters a token. Results are flagged as estimates."""
    return tokens_of(token_counts(text))


def tokens_of(counts: tuple[int, int]) -> int:
    """The estimate of a text from its `token_counts` (kept per running turn, grown per piece)."""
    cjk, other = counts
    return cjk + (other + 3) // 4


def token_counts(text: str) -> tuple[int, int]:
    """(CJK characters, other characters): additive over pieces, so a growing text's estimate
    can be kept up to date without counting it again."""
    cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
    return cjk, len(text) - cjk


def estimate_messages_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(m.get("content", "")) + 4 for m in messages) + 2


class LLMClient:
    """Base class for providers.

    Capability attributes (class or instance):
      name            -- shown to users ("local", "openai", a provider row's name)
      model           -- the model id sent with each request
      concurrency     -- how many calls may run at once against this provider
      streams_usage   -- whether the server reports token usage in the stream
      context_window  -- tokens the model accepts, when known
      supports_grammar -- whether `stream(..., extra={"grammar": GBNF})` constrains the reply
                         (llama.cpp's servers); elsewhere the field is ignored or refused
      awaits_human    -- a person answers (`answered(key)` says whether they have yet)
      price           -- USD per million input and output tokens, when known (`debates.prices`)
    """

    name: str = "base"
    model: str = ""
    concurrency: int = 4
    streams_usage: bool = False
    context_window: int | None = None
    supports_grammar: bool = False
    awaits_human: bool = False  # a person's seat (`debates.providers.human`): may not be answered yet
    price: tuple[float, float] | None = None  # USD per million input / output tokens; None: unknown

    def __init__(self) -> None:
        self._limiters: dict[int, asyncio.Semaphore] = {}

    @property
    def limiter(self) -> asyncio.Semaphore:
        """A semaphore per event loop bounding concurrent calls (semaphores bind to one loop)."""
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._limiters:
            self._limiters[loop_id] = asyncio.Semaphore(max(1, self.concurrency))
        return self._limiters[loop_id]

    async def ensure_ready(self, on_status=None) -> None:
        """Prepare the backend (e.g. start the local model).

        `on_status` is an async callable: `await on_status("loading model")` reports progress to
        the debate's viewers while this waits.
        """

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
        """Stream one reply. `extra` goes into the request body as is (e.g. a server's `grammar`);
        `key` names the turn the call serves (for logs, and for fakes scripted by turn).

        The stream yields only answer text. A reasoning model's thinking goes, piece by piece as
        it streams, to `on_thinking` (called synchronously; providers that cannot think accept the
        keyword and never call it), and all of it to `completion.thinking`."""
        raise NotImplementedError

    def completion_limit(self, messages: Sequence[Message], max_tokens: int, *, key: str | None = None) -> int | None:
        """The most completion tokens a call with this allowance can be charged: the limit its
        request carries (a reasoning model's `with_headroom`, for one). None: no model answers
        (a person writes the turn), so the call costs no tokens. A token cap reserves this, with
        the prompt, before the turn starts (`debates.engine.context.DebateContext.allowance`)."""
        return max_tokens

    def describe(self) -> str:
        return f"{self.name}:{self.model}"

    def describe_for(self, key: str | None) -> str:
        """Who answers the turn `key` (a person's seat may hand a turn to a model)."""
        return self.describe()

    def price_for(self, key: str | None) -> tuple[float, float] | None:
        """The price of the turn `key` (a person's seat costs nothing unless a model stands in)."""
        return self.price
