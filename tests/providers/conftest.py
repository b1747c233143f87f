"""Fixtures for provider tests: a real loopback fake OpenAI server and clients pointed at it."""

from __future__ import annotations

import pytest

from debates.providers.openai_compat import OpenAICompatibleClient
from testkit.fake_openai import FakeOpenAIServer

FAKE_KEY = "sk-test-SECRET-1234567890"


@pytest.fixture
def server():
    with FakeOpenAIServer(token_delay=0.001) as fake:
        yield fake


@pytest.fixture
async def make_client(server):
    """Build clients for the fake server with test-sized timeouts and backoff; close them after."""
    made: list[OpenAICompatibleClient] = []

    def make(**overrides) -> OpenAICompatibleClient:
        options = {
            "timeout": 5.0,
            "request_timeout": 1.0,
            "max_retries": 3,
            "backoff_base": 0.01,
        }
        options.update(overrides)
        base_url = options.pop("base_url", server.base_url)
        api_key = options.pop("api_key", FAKE_KEY)
        model = options.pop("model", "fake-model")
        client = OpenAICompatibleClient(base_url, api_key, model, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
