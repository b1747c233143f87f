"""An in-process fake LLM for engine unit tests: records every call, replies by a script.

Integration tests use `fake_openai.FakeOpenAIServer` (real HTTP); this one keeps pure engine tests
fast and deterministic.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from debates.providers.base import ChatStream, Completion, LLMClient, estimate_messages_tokens, estimate_tokens


@dataclass
class Call:
    messages: list[dict]
    max_tokens: int | None
    stop: list[str] | None
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


def default_reply(messages: list[dict]) -> str:
    """Deterministic text that follows the asked-for structure well enough for every format."""
    system = messages[0]["content"] if messages else ""
    name = re.search(r"你是「([^」]+)」", system)
    who = name.group(1) if name else "发言者"
    return (
        f"立场：{who}坚持自己的看法。\n核心论点：{who}的核心论点。\n论据：\n1. 第一条理由。\n2. 第二条理由。\n"
        "反驳：无\n沉默声明：无\n置信度：中\n类型：选择决策型\n可证伪：是\n理由：可检验。\n"
        "话题标识：sample debate topic\n"
        f"立场变化：无\n小结：{who}的本轮小结。"
    )


@dataclass
class FakeLLM(LLMClient):
    reply: Callable[[list[dict]], str] = default_reply
    delay: float = 0.0  # seconds per chunk
    chunk: int = 4
    name: str = "fake"
    model: str = "fake-model"
    concurrency: int = 8
    streams_usage: bool = True
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        LLMClient.__init__(self)

    def stream(self, messages, *, max_tokens=None, stop=None, temperature=None, extra=None) -> ChatStream:
        call = Call(list(messages), max_tokens, list(stop) if stop else None)
        self.calls.append(call)
        completion = Completion()

        async def deltas():
            call.started = time.monotonic()
            text = self.reply(list(messages))
            call.reply = text
            for i in range(0, len(text), self.chunk):
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield text[i : i + self.chunk]
            call.finished = time.monotonic()
            completion.text = text
            completion.prompt_tokens = estimate_messages_tokens(messages)
            completion.completion_tokens = estimate_tokens(text)
            completion.finish_reason = "stop"

        return ChatStream(deltas(), completion)
