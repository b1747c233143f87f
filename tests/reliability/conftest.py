"""Helpers for the reliability and privacy suites: recompute the token ledger from what the fake
server itself recorded, and wait for a debate's status. (Users, libraries and `fast_llm` live in
tests/conftest.py.)"""

from __future__ import annotations

import asyncio
import json

from channels.db import database_sync_to_async

from debates.providers.base import estimate_messages_tokens, estimate_tokens
from testkit.fake_openai import RecordedRequest
from tests.conftest import PROVIDER_BACKOFF as BACKOFF  # noqa: F401 - the suites import it from here
from tests.conftest import PROVIDER_RETRIES as RETRIES  # noqa: F401
from tests.conftest import PROVIDER_TIMEOUT as TIMEOUT  # noqa: F401

FINAL = ("done", "failed", "stopped", "refused")


class NthTurn:
    """A fault's `when`: true for every request (retries included) of the n-th distinct prompt the
    server sees, i.e. the n-th turn of a sequential debate."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen: list[str] = []

    def __call__(self, body: dict) -> bool:
        key = json.dumps(body.get("messages"), sort_keys=True, ensure_ascii=False)
        if key not in self.seen:
            self.seen.append(key)
        return self.seen.index(key) == self.n - 1


def completed(request: RecordedRequest) -> bool:
    """The fake server streamed a whole reply (and its usage chunk) for this request."""
    return request.status == 200 and request.outcome == "ok" and request.fault in (None, "long") and request.tokens


def reported_usage(request: RecordedRequest) -> tuple[int, int]:
    """The usage chunk the fake server sent: its prompt estimate and the tokens it streamed."""
    messages = [{"role": str(m.get("role")), "content": str(m.get("content"))} for m in request.messages]
    return estimate_messages_tokens(messages), len(request.tokens)


def failed_attempt_estimate(messages: list[dict], partial: str) -> tuple[int, int]:
    """What the engine charges for a failed attempt: estimated from what was sent and received."""
    return sum(estimate_tokens(m["content"]) for m in messages), estimate_tokens(partial)


async def wait_for_status(debate_id: int, statuses=FINAL, timeout: float = 20.0) -> str:
    from debates.models import Debate

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        status = await database_sync_to_async(lambda: Debate.objects.get(pk=debate_id).status)()
        if status in statuses:
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"debate {debate_id} did not reach {statuses} in {timeout} s (now {status})")
