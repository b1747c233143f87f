"""A seat taken by a person: the turn's text is what they wrote on the live page.

The engine asks this client like any other; until the person has written the turn, `answered` is
false and the engine stops the run there (`AwaitingHuman`), so the wait lives in the database and
survives a restart. Once written (or passed, or handed to a model when the deadline ran out), a
resumed run streams it through the same path as a model's reply: summaries, checks and early stops
treat it exactly alike. No Django here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from debates.providers.base import ChatStream, Completion, LLMClient, Message

PASSED = "（本轮弃权：{name} 没有在时限内发言。）"
CHUNK = 6  # characters per delta: a person's turn arrives on the other viewers' pages as text does


class HumanClient(LLMClient):
    awaits_human = True
    streams_usage = True  # a person costs no tokens: zero is exact, not an estimate
    concurrency = 8
    price = (0.0, 0.0)  # a person's words cost nothing (a model standing in is priced as itself)

    def __init__(self, name: str, inputs: Mapping[str, Mapping], stand_in: LLMClient | None = None) -> None:
        """`inputs` maps a turn key to what the person gave: {"text": …}, or {"stand_in": "llm"}
        (a model speaks for them), or {"stand_in": "pass"}."""
        super().__init__()
        self.name, self.model = name, "human"
        self.inputs = inputs
        self.stand_in = stand_in

    def answered(self, key: str | None) -> bool:
        return key in self.inputs

    def describe(self) -> str:
        return f"human · {self.name}"

    def describe_for(self, key: str | None) -> str:
        given = self.inputs.get(key) or {}
        if given.get("stand_in") == "llm" and self.stand_in is not None:
            return f"{self.stand_in.describe()} (stands in for {self.name})"
        return self.describe()

    def price_for(self, key: str | None) -> tuple[float, float] | None:
        given = self.inputs.get(key) or {}
        if given.get("stand_in") == "llm" and self.stand_in is not None:
            return self.stand_in.price
        return self.price

    def stream(self, messages: Sequence[Message], *, key: str | None = None, **kwargs) -> ChatStream:
        given = self.inputs[key]
        if given.get("stand_in") == "llm" and self.stand_in is not None:
            return self.stand_in.stream(messages, key=key, **kwargs)
        text = str(given.get("text") or PASSED.format(name=self.name))
        completion = Completion(finish_reason="stop")

        async def deltas():
            for start in range(0, len(text), CHUNK):
                yield text[start : start + CHUNK]
                await asyncio.sleep(0)
            completion.text = text

        return ChatStream(deltas(), completion)
