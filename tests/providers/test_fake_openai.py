"""The fake OpenAI server itself, driven with plain urllib (sync) and the openai SDK (async)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import openai
import pytest

from testkit.fake_openai import FakeOpenAIServer, Fault, Reply, default_reply, max_overlap, tokenize


def post(server: FakeOpenAIServer, body: dict, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def sse_chunks(raw: bytes) -> list[dict | str]:
    """Parse an SSE body into JSON chunks (and the literal "[DONE]")."""
    out: list[dict | str] = []
    for event in raw.decode().split("\n\n"):
        if event.startswith("data: "):
            data = event[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def body(content: str = "hello", **extra) -> dict:
    return {"model": "fake-model", "messages": [{"role": "user", "content": content}], **extra}


def test_tokenize_round_trips_and_splits_cjk_per_character():
    text = "Hello,  world! 你好世界。 ok\n"
    tokens = tokenize(text)
    assert "".join(tokens) == text
    assert {"你", "好", "世", "界"} <= set(tokens)
    assert "  world!" in tokens  # a word carries its leading whitespace


def test_stream_is_openai_shaped_with_usage_and_done():
    with FakeOpenAIServer(["Hi there, 朋友"]) as server:
        status, headers, raw = post(server, body(stream=True, stream_options={"include_usage": True}))

    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    chunks = sse_chunks(raw)
    assert chunks[-1] == "[DONE]"
    *content, finish, usage, _ = chunks
    assert all(c["object"] == "chat.completion.chunk" for c in content)
    assert content[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in content) == "Hi there, 朋友"
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == len(tokenize("Hi there, 朋友"))


def test_no_usage_chunk_unless_asked():
    with FakeOpenAIServer() as server:
        _, _, raw = post(server, body(stream=True))
    assert not any(isinstance(c, dict) and c.get("usage") for c in sse_chunks(raw))


def test_token_delay_spaces_tokens_and_chunks_carry_send_times():
    with FakeOpenAIServer(["a b c d e f"], token_delay=0.03) as server:
        _, _, raw = post(server, body(stream=True))
        record = server.chat_requests[0]

    gaps = [b - a for a, b in zip(record.token_times, record.token_times[1:], strict=False)]
    assert len(record.token_times) == 6
    assert min(gaps) >= 0.025
    sent_at = [c["agora_sent_at"] for c in sse_chunks(raw) if isinstance(c, dict) and c["choices"]]
    assert sent_at == sorted(sent_at) and sent_at[-1] <= time.monotonic()


def test_default_reply_is_deterministic_and_request_derived():
    a, b = body("first question"), body("second question")
    assert default_reply(a) == default_reply(a) != default_reply(b)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in default_reply(body("你觉得呢？")))
    with FakeOpenAIServer() as server:
        _, _, raw = post(server, body("first question"))
    assert json.loads(raw)["choices"][0]["message"]["content"] == default_reply(a)


def test_queue_then_default_and_max_tokens_and_stop():
    with FakeOpenAIServer(["one two three four", Reply("alpha STOP beta")]) as server:
        _, _, first = post(server, body(max_tokens=2))
        _, _, second = post(server, body(stop=["STOP"]))
        _, _, third = post(server, body("x"))
    first_choice = json.loads(first)["choices"][0]
    assert first_choice["message"]["content"] == "one two" and first_choice["finish_reason"] == "length"
    assert json.loads(second)["choices"][0]["message"]["content"] == "alpha "
    assert json.loads(third)["choices"][0]["message"]["content"] == default_reply(body("x"))


def test_faults_by_count_and_by_predicate():
    with FakeOpenAIServer() as server:
        server.inject(Fault.rate_limit(retry_after=2), times=2)
        server.inject("500", when=lambda req: req["messages"][0]["content"] == "target", times=None)
        statuses = [post(server, body("a"))[0] for _ in range(3)]
        targeted = [post(server, body("target"))[0] for _ in range(2)]
        server.inject(Fault.rate_limit(retry_after=0.5))
        status, headers, raw = post(server, body("a"))
    assert statuses == [429, 429, 200]
    assert targeted == [500, 500]
    assert status == 429 and headers["Retry-After"] == "0.5"
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"


def test_long_and_empty_replies():
    with FakeOpenAIServer() as server:
        server.inject(Fault.long(tokens=300))
        _, _, long_raw = post(server, body(stream=True))
        server.inject(Fault.empty())
        _, _, empty_raw = post(server, body(stream=True))
        long_req, empty_req = server.chat_requests
    assert len(long_req.tokens) == 300
    assert empty_req.tokens == [] and sse_chunks(empty_raw)[-1] == "[DONE]"


def test_malformed_chunk_is_not_json():
    with FakeOpenAIServer(["x y z"]) as server:
        server.inject(Fault.malformed(after=1))
        _, _, raw = post(server, body(stream=True))
    with pytest.raises(json.JSONDecodeError):
        sse_chunks(raw)


def test_hang_is_released_by_stop():
    server = FakeOpenAIServer().start()
    server.inject(Fault.hang())
    started = time.monotonic()
    with pytest.raises(OSError):  # urllib's socket timeout
        post(server, body(), timeout=0.3)
    server.stop()
    record = server.chat_requests[0]
    assert record.fault == "hang" and record.finished is not None
    assert time.monotonic() - started < 3


def test_models_and_auth():
    with FakeOpenAIServer(api_key="sk-good", models=["m1", "m2"]) as server:

        def get(key: str) -> int:
            request = urllib.request.Request(server.base_url + "/models", headers={"Authorization": f"Bearer {key}"})
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    assert [m["id"] for m in json.load(response)["data"]] == ["m1", "m2"]
                    return response.status
            except urllib.error.HTTPError as err:
                assert "sk-bad-key-123" not in err.read().decode()  # masked like OpenAI does
                return err.code

        assert get("sk-good") == 200
        assert get("sk-bad-key-123") == 401
        assert server.requests[0].headers["authorization"] == "Bearer <redacted>"


async def test_usable_from_async_code_with_the_sdk():
    async with FakeOpenAIServer(["a b c"], token_delay=0.002) as server:
        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        stream = await sdk.chat.completions.create(model="fake-model", messages=body()["messages"], stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        await sdk.close()
    assert text == "a b c"
    assert max_overlap(server.requests) == 1
