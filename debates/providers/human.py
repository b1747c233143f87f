"""A seat taken by a person: the turn's text is what they wrote on the live page.

The engine asks this client like any other; until the person has written the turn, `answered` is
false and the engine stops the run there (`AwaitingHuman`), so the wait lives in the database and
survives a restart. Once written (or passed, or handed to a model when the deadline ran out), a
resumed run streams it through the same path as a model's reply: summaries, checks and early stops
treat it exactly alike. A seat whose person is gone (declined, left) is `absent`: every turn goes
as a missed one does, at once. No Django here.
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

    def __init__(
        self, name: str, inputs: Mapping[str, Mapping], stand_in: LLMClient | None = None, absent: str = ""
    ) -> None:
        """`inputs` maps a turn key to what the person gave: {"text": …}, or {"stand_in": "llm"}
        (a model speaks for them), or {"stand_in": "pass"}. `absent` ("llm" or "pass"): the person
        has gone, and a turn they did not give goes that way without waiting."""
        super().__init__()
        self.name, self.model = name, "human"
        self.inputs = inputs
        self.stand_in = stand_in
        self.absent = absent

    def _given(self, key: str | None) -> Mapping:
        given = self.inputs.get(key)
        if given is None and self.absent:
            return {"stand_in": self.absent}
        return given or {}

    def answered(self, key: str | None) -> bool:
        return key in self.inputs or bool(self.absent)

    def describe(self) -> str:
        return f"human · {self.name}"

    def describe_for(self, key: str | None) -> str:
        given = self._given(key)
        if given.get("stand_in") == "llm" and self.stand_in is not None:
            return f"{self.stand_in.describe()} (stands in for {self.name})"
        return self.describe()

    def price_for(self, key: str | None) -> tuple[float, float] | None:
        given = self._given(key)
        if given.get("stand_in") == "llm" and self.stand_in is not None:
            return self.stand_in.price
        return self.price

    def completion_limit(self, messages: Sequence[Message], max_tokens: int, *, key: str | None = None) -> int | None:
        given = self._given(key)
        if given.get("stand_in") == "llm" and self.stand_in is not None:
            return self.stand_in.completion_limit(messages, max_tokens, key=key)
        return None  # the person's words cost nothing

    def stream(self, messages: Sequence[Message], *, key: str | None = None, **kwargs) -> ChatStream:
        given = self._given(key)
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
