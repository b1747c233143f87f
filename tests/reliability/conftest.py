"""Fixtures for the reliability and privacy suites: loaded libraries, three users, fast provider
settings against the fake OpenAI server, and helpers that recompute the token ledger from what the
fake server itself recorded."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command
from django.test import override_settings

from debates.providers.base import estimate_messages_tokens, estimate_tokens
from debates.testing.fake_openai import RecordedRequest

# Small numbers keep the suite fast: a hang fails after TIMEOUT s per attempt, retries back off
# from 10 ms. (Retry-After from the server still wins over the backoff.)
TIMEOUT = 0.4
RETRIES = 2
BACKOFF = 0.01
FINAL = ("done", "failed", "stopped", "refused")


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Creating users is the slow part of these tests: hash their passwords cheaply."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def libraries(db):
    call_command("load_libraries", verbosity=0)


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("staff", password="pw-staff-123", is_staff=True)


@pytest.fixture
def fast_llm(fake_llm):
    """The fake server, with the default provider pointed at it and short timeouts/backoff."""
    fake_llm.token_delay = 0.0
    with override_settings(
        OPENAI_BASE_URL=fake_llm.base_url,
        AGORA_MODEL="fake-model",
        AGORA_PROVIDER_TIMEOUT=TIMEOUT,
        AGORA_PROVIDER_RETRIES=RETRIES,
        AGORA_PROVIDER_BACKOFF=BACKOFF,
    ):
        yield fake_llm


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
