"""An in-process fake LLM client for engine tests, in the shape of simonw/llm's MockModel: replies
are queued per turn key, every call is kept.

    fake = FakeLLM()
    fake.reply("duel:1:huineng", "正文：…\\n立场变化：无\\n小结：…")   # this turn's reply
    fake.reply("r1:*", lambda call: f"立场：{call.speaker}…")         # every R1 turn, computed
    fake.reply("host:verdict", ServerError("boom"))                   # this turn fails
    outcome = await run_debate(spec, ClientPool(fake), sink)
    fake.calls_for("duel:1:huineng")[0].user                           # what that turn was asked

Keys are the engine's turn keys (`TurnPlan.key`, passed to `stream(key=…)`); a pattern may use
shell wildcards. Replies queued for a key are used in order, the last one again for later calls.
A turn nothing was queued for gets `default_reply`, which follows every format's asked-for
structure well enough. The HTTP fake (`testkit.fake_openai`) stays for provider and end-to-end
tests.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from debates.providers.base import (
    ChatStream,
    Completion,
    LLMClient,
    ProviderError,
    estimate_messages_tokens,
    estimate_tokens,
)

_NAME = re.compile(r"你是「([^」]+)」")


@dataclass
class Call:
    key: str | None
    messages: list[dict]
    max_tokens: int | None
    stop: list[str] | None
    extra: dict | None = None
    started: float = 0.0
    finished: float = 0.0
    reply: str = ""

    @property
    def system(self) -> str:
        return self.messages[0]["content"] if self.messages else ""

    @property
    def user(self) -> str:
        return self.messages[-1]["content"] if self.messages else ""

    @property
    def text(self) -> str:
        return "\n".join(m["content"] for m in self.messages)

    @property
    def speaker(self) -> str:
        """The persona name the call speaks as (its system prompt starts "你是「name」")."""
        match = _NAME.search(self.system)
        return match.group(1) if match else ""


@dataclass(frozen=True)
class Counted:
    """A scripted reply with the usage its server reports (else estimated from the text), e.g. a
    panel baseline whose prompt counts as large, so the seed's cap leaves a test's rounds room."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


Reply = str | Callable[[Call], str] | ProviderError | Counted


def default_reply(call: Call) -> str:
    """Deterministic text that follows the asked-for structure well enough for every format."""
    who = call.speaker or "发言者"
    return (
        f"立场：{who}坚持自己的看法。\n核心论点：{who}的核心论点。\n论据：\n1. 第一条理由。\n2. 第二条理由。\n"
        "反驳：无\n沉默声明：无\n置信度：中\n类型：选择决策型\n可证伪：是\n理由：可检验。\n"
        "话题标识：sample debate topic\n"
        f"立场变化：无\n小结：{who}的本轮小结。"
    )


class FakeLLM(LLMClient):
    def __init__(
        self,
        *,
        default: Callable[[Call], str] = default_reply,
        delay: float = 0.0,
        chunk: int = 4,
        concurrency: int = 8,
        name: str = "fake",
        model: str = "fake-model",
    ) -> None:
        super().__init__()
        self.default = default
        self.delay = delay  # seconds per chunk
        self.chunk = chunk
        self.concurrency = concurrency
        self.name = name
        self.model = model
        self.streams_usage = True
        self.queued: dict[str, list[Reply]] = {}
        self.calls: list[Call] = []

    # -- scripting ------------------------------------------------------------------------------

    def reply(self, key: str, *replies: Reply) -> FakeLLM:
        """Queue replies for a turn key (or a wildcard pattern)."""
        self.queued.setdefault(key, []).extend(replies)
        return self

    def _next(self, key: str | None) -> Reply | None:
        if key is None:
            return None
        pattern = key if key in self.queued else next((p for p in self.queued if fnmatch.fnmatchcase(key, p)), None)
        if pattern is None:
            return None
        queue = self.queued[pattern]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    # -- what happened ------------------------------------------------------------------------

    def calls_for(self, key_or_pattern: str) -> list[Call]:
        return [c for c in self.calls if c.key and fnmatch.fnmatchcase(c.key, key_or_pattern)]

    @property
    def keys(self) -> list[str | None]:
        return [c.key for c in self.calls]

    # -- the client -------------------------------------------------------------------------------

    def stream(
        self, messages, *, max_tokens=None, stop=None, temperature=None, extra=None, key=None, on_thinking=None
    ) -> ChatStream:
        call = Call(key, list(messages), max_tokens, list(stop) if stop else None, dict(extra) if extra else None)
        self.calls.append(call)
        completion = Completion()
        scripted = self._next(key)

        async def deltas():
            call.started = time.monotonic()
            if isinstance(scripted, ProviderError):
                raise scripted
            counted = scripted if isinstance(scripted, Counted) else Counted("")
            text = scripted(call) if callable(scripted) else (counted.text if scripted is counted else scripted)
            text = self.default(call) if text is None else text
            call.reply = text
            for i in range(0, len(text), self.chunk):
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield text[i : i + self.chunk]
            call.finished = time.monotonic()
            completion.text = text
            completion.prompt_tokens = counted.prompt_tokens or estimate_messages_tokens(messages)
            completion.completion_tokens = counted.completion_tokens or estimate_tokens(text)
            completion.finish_reason = "stop"

        return ChatStream(deltas(), completion)
