"""OpenAICompatibleClient against the fake server over real loopback HTTP."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest

from debates.providers.base import (
    BadResponse,
    ConnectionLost,
    ProviderError,
    ProviderTimeout,
    ProviderUnavailable,
    estimate_messages_tokens,
    estimate_tokens,
)
from debates.providers.openai_compat import OpenAICompatibleClient
from testkit.fake_openai import FakeOpenAIServer, Fault, Reply, max_overlap

from .conftest import FAKE_KEY

MESSAGES = [
    {"role": "system", "content": "You are Socrates."},
    {"role": "user", "content": "Is virtue teachable?"},
]


async def collect(stream) -> list[str]:
    return [delta async for delta in stream]


def chat(server):
    return server.chat_requests


# -- the happy path ----------------------------------------------------------------------------


async def test_deltas_reassemble_to_scripted_text(server, make_client):
    text = "Virtue, I think, is knowledge — 美德即知识。 Let us examine that."
    server.enqueue(Reply(text))
    stream = make_client().stream(MESSAGES, max_tokens=200, stop=["\n\nUser:"], temperature=0.7)

    deltas = await collect(stream)

    assert "".join(deltas) == text
    assert len(deltas) > 10  # really streamed in pieces
    assert stream.completion.text == text
    assert stream.completion.finish_reason == "stop"
    assert stream.completion.attempts == 1
    sent = chat(server)[0].body
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["max_tokens"] == 200 and sent["stop"] == ["\n\nUser:"] and sent["temperature"] == 0.7
    assert sent["model"] == "fake-model" and sent["messages"] == MESSAGES


async def test_script_can_answer_per_persona(server, make_client):
    server.script = lambda request: f"I am {request['messages'][0]['content'].split()[-1]}"
    client = make_client()

    a = await collect(client.stream([{"role": "system", "content": "You are Plato"}]))
    b = await collect(client.stream([{"role": "system", "content": "You are Kant"}]))

    assert "".join(a) == "I am Plato"
    assert "".join(b) == "I am Kant"


async def test_usage_is_taken_from_the_stream(server, make_client):
    server.enqueue(Reply("Short answer.", prompt_tokens=321, completion_tokens=7))
    stream = make_client().stream(MESSAGES)
    await collect(stream)

    assert stream.completion.prompt_tokens == 321
    assert stream.completion.completion_tokens == 7
    assert stream.completion.usage_estimated is False


async def test_usage_is_estimated_and_flagged_when_the_server_omits_it(server, make_client):
    text = "No usage chunk from this server, 这里也没有。"
    server.enqueue(Reply(text, usage=False))
    stream = make_client().stream(MESSAGES)
    await collect(stream)

    assert stream.completion.usage_estimated is True
    assert stream.completion.completion_tokens == estimate_tokens(text)
    assert stream.completion.prompt_tokens == estimate_messages_tokens(MESSAGES)


async def test_streams_usage_false_does_not_send_stream_options(server, make_client):
    stream = make_client(streams_usage=False).stream(MESSAGES)
    await collect(stream)

    assert "stream_options" not in chat(server)[0].body
    assert stream.completion.usage_estimated is True


async def test_early_break_closes_the_request(server, make_client):
    server.enqueue(Reply("one two three four five six seven eight nine ten", token_delay=0.02))
    stream = make_client().stream(MESSAGES)
    async for _ in stream:
        break
    await stream.deltas.aclose()
    await asyncio.sleep(0.1)
    assert chat(server)[0].finished is not None


# -- retries before any text -------------------------------------------------------------------


async def test_429_with_retry_after_then_success(server, make_client, caplog):
    caplog.set_level(logging.DEBUG)
    server.inject(Fault.rate_limit(retry_after=0.3))
    stream = make_client().stream(MESSAGES)

    text = "".join(await collect(stream))

    first, second = chat(server)
    assert first.status == 429 and second.status == 200
    assert stream.completion.attempts == 2
    assert second.started - first.finished >= 0.3  # honoured Retry-After, not the 10 ms backoff
    assert text == second.text
    assert FAKE_KEY not in caplog.text


async def test_500_then_success(server, make_client):
    server.inject(Fault.server_error(500))
    stream = make_client().stream(MESSAGES)

    text = "".join(await collect(stream))

    assert [r.status for r in chat(server)] == [500, 200]
    assert stream.completion.attempts == 2
    assert text and text == chat(server)[1].text


async def test_server_errors_exhaust_retries_with_a_clear_message(server, make_client):
    server.inject(Fault.server_error(503), times=None)
    stream = make_client(max_retries=2).stream(MESSAGES)

    with pytest.raises(ProviderError) as info:
        await collect(stream)

    assert info.value.retryable
    assert "HTTP 503" in str(info.value) and server.base_url in str(info.value)
    assert len(chat(server)) == 3
    assert stream.completion.attempts == 3


async def test_hang_raises_provider_timeout_within_the_timeout(server, make_client):
    server.inject(Fault.hang())
    started = time.monotonic()

    with pytest.raises(ProviderTimeout) as info:
        await collect(make_client(request_timeout=0.5, max_retries=0).stream(MESSAGES))

    elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 1.5
    assert "no answer" in str(info.value) and "0.5 s" in str(info.value)


async def test_hang_is_retried_when_nothing_streamed(server, make_client):
    server.inject(Fault.hang())
    stream = make_client(request_timeout=0.3).stream(MESSAGES)

    text = "".join(await collect(stream))

    assert text and stream.completion.attempts == 2


async def test_hang_mid_stream_keeps_partial_text_and_does_not_retry(server, make_client):
    server.inject(Fault.hang(after=3))
    stream = make_client(request_timeout=0.3).stream(MESSAGES)
    received: list[str] = []

    with pytest.raises(ProviderTimeout) as info:
        async for delta in stream:
            received.append(delta)

    assert len(received) == 3
    assert info.value.partial_text == "".join(received)
    assert len(chat(server)) == 1


async def test_first_token_timeout(server, make_client):
    server.enqueue(Reply("late", first_token_delay=1.0))
    started = time.monotonic()

    with pytest.raises(ProviderTimeout) as info:
        await collect(make_client(first_token_timeout=0.2, max_retries=0).stream(MESSAGES))

    assert time.monotonic() - started < 0.8
    assert "first token" in str(info.value)


async def test_disconnect_mid_stream_raises_connection_lost_with_partial_text(server, make_client):
    server.inject(Fault.disconnect(after=4))
    stream = make_client().stream(MESSAGES)
    received: list[str] = []

    with pytest.raises(ConnectionLost) as info:
        async for delta in stream:
            received.append(delta)

    assert len(received) == 4
    assert info.value.partial_text == "".join(received) == chat(server)[0].text
    assert len(chat(server)) == 1  # never retried after text reached the consumer
    assert stream.completion.attempts == 1


async def test_disconnect_before_any_text_is_retried(server, make_client):
    server.inject(Fault.disconnect(after=0))
    stream = make_client().stream(MESSAGES)

    text = "".join(await collect(stream))

    assert text and stream.completion.attempts == 2


async def test_malformed_chunk_is_retried_then_succeeds(server, make_client):
    server.inject(Fault.malformed())
    stream = make_client().stream(MESSAGES)

    text = "".join(await collect(stream))

    assert text and stream.completion.attempts == 2


async def test_malformed_chunks_forever_give_a_clear_error(server, make_client):
    server.inject(Fault.malformed(), times=None)

    with pytest.raises(BadResponse) as info:
        await collect(make_client(max_retries=2).stream(MESSAGES))

    assert "malformed" in str(info.value) and server.base_url in str(info.value)
    assert len(chat(server)) == 3


async def test_malformed_after_text_keeps_partial_text(server, make_client):
    server.inject(Fault.malformed(after=2))

    with pytest.raises(BadResponse) as info:
        await collect(make_client().stream(MESSAGES))

    assert info.value.partial_text == chat(server)[0].text != ""
    assert len(chat(server)) == 1


async def test_empty_reply_is_retried_then_succeeds(server, make_client):
    server.inject(Fault.empty())
    stream = make_client().stream(MESSAGES)

    text = "".join(await collect(stream))

    assert text and stream.completion.attempts == 2


async def test_empty_replies_forever_give_a_clear_error(server, make_client):
    server.inject(Fault.empty(), times=None)

    with pytest.raises(BadResponse) as info:
        await collect(make_client(max_retries=1).stream(MESSAGES))

    assert "empty reply" in str(info.value)
    assert len(chat(server)) == 2


# -- configuration errors: fast, not retried, and they name the fix ----------------------------


async def test_unreachable_server_fails_fast_naming_the_url(make_client):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    started = time.monotonic()

    with pytest.raises(ProviderUnavailable) as info:
        await collect(make_client(base_url=url, backoff_base=0.5).stream(MESSAGES))

    assert time.monotonic() - started < 0.5  # no backoff loop
    assert url in str(info.value) and "is the server running" in str(info.value)
    assert not info.value.retryable


async def test_401_message_names_the_key_variable_and_hides_the_key(make_client, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer(api_key="sk-the-right-one") as guarded:
        client = make_client(base_url=guarded.base_url)
        with pytest.raises(ProviderUnavailable) as info:
            await collect(client.stream(MESSAGES))
        assert len(guarded.chat_requests) == 1  # not retried

    message = str(info.value)
    assert "the server refused the API key: set OPENAI_API_KEY" in message
    for leak in (message, repr(info.value), repr(client), caplog.text, client.describe()):
        assert FAKE_KEY not in leak
        assert "SECRET" not in leak


async def test_unknown_model_names_agora_model(make_client):
    with FakeOpenAIServer(models=["llama-3"]) as fake:
        with pytest.raises(ProviderUnavailable) as info:
            await collect(make_client(base_url=fake.base_url, model="gpt-nope").stream(MESSAGES))

    assert f"model gpt-nope not found on {fake.base_url}: set AGORA_MODEL" in str(info.value)


def test_repr_hides_key_and_capabilities_come_from_arguments():
    client = OpenAICompatibleClient(
        "http://user:pw@example.test/v1/",
        FAKE_KEY,
        "m1",
        name="groq",
        concurrency=7,
        streams_usage=False,
        context_window=8192,
    )
    assert (client.name, client.model, client.concurrency) == ("groq", "m1", 7)
    assert client.streams_usage is False and client.context_window == 8192
    assert client.describe() == "groq:m1"
    assert FAKE_KEY not in repr(client) and "pw" not in repr(client)


# -- concurrency -------------------------------------------------------------------------------


async def _run_parallel(client, n: int) -> None:
    async def one(i: int) -> str:
        async with client.limiter:  # the engine does this; here the test plays the engine
            return "".join(await collect(client.stream([{"role": "user", "content": f"question {i}"}])))

    texts = await asyncio.gather(*(one(i) for i in range(n)))
    assert all(texts)


async def test_concurrency_2_bounds_parallel_requests(server, make_client):
    server.token_delay = 0.01
    server.script = lambda request: "one two three four five six seven eight"
    await _run_parallel(make_client(concurrency=2), 5)

    requests = chat(server)
    assert len(requests) == 5
    assert max_overlap(requests) == 2
    assert server.peak_in_flight == 2


async def test_concurrency_5_runs_all_in_parallel(server, make_client):
    server.token_delay = 0.01
    server.script = lambda request: "one two three four five six seven eight"
    await _run_parallel(make_client(concurrency=5), 5)

    # All five streams open at once, as the server saw them (a wall-clock bound here failed a CI
    # run on a loaded machine: 0.321 s against 0.32, while the overlap said the same thing).
    assert max_overlap(chat(server)) == 5
