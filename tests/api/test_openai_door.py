"""A debate as a model, end to end: the real `openai` SDK against a real daphne at /openai/v1,
the fake OpenAI server speaking for the personas. Streamed and not: the speeches arrive as
`reasoning_content`, the verdict as `content` with the debate's page, `usage` is the debate's
own; refusals arrive as the SDK's own exceptions; a client that hangs up stops nothing."""

from __future__ import annotations

import json
import time

import httpx2
import openai
import pytest

from tests.api.client import Api

pytestmark = pytest.mark.slow
QUESTION = "Is chanting the Buddha's name or Chan meditation the better practice for a busy modern person?"
# The duel's bundled library is Buddhist masters: two of them, named as the JSON API names them.
MASTERS = {"rounds": 1, "personas": ["yinguang", "huineng"]}
DATA = __import__("pathlib").Path(__file__).resolve().parents[1] / "data"


def client(agora, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{agora.url}/openai/v1", api_key=token, max_retries=0, timeout=120)


def finished(api: Api, pk: int, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        debate = api.get(f"/debates/{pk}").json()
        if debate["status"] in ("done", "failed", "stopped", "refused"):
            return debate
        time.sleep(0.1)
    raise AssertionError(f"debate {pk} still {debate['status']}")


def newest(api: Api) -> dict:
    return api.get("/debates").json()["items"][0]


def test_a_streamed_debate_reads_as_a_reasoning_model(agora, fake_llm, tokens, alice):
    stream = client(agora, tokens["alice"]).chat.completions.create(
        model="agora-duel",
        messages=[
            {"role": "system", "content": "I lead the team; we ship a mobile app."},
            {"role": "user", "content": QUESTION},
        ],
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"agora": MASTERS},
    )
    reasoning, content, usage, finish, ids = [], [], None, None, set()
    for chunk in stream:
        ids.add(chunk.id)
        if chunk.usage:
            usage = chunk.usage
        for choice in chunk.choices:
            extra = choice.delta.model_extra or {}
            reasoning.append(extra.get("reasoning_content") or "")
            content.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    thinking, answer = "".join(reasoning), "".join(content)
    summary = newest(alice)
    debate = alice.get(f"/debates/{summary['id']}").json()
    assert debate["status"] == "done" and debate["topic"] == QUESTION and len(ids) == 1 and finish == "stop"
    # Every speech, whole and in order, under its speaker's heading, in the debate's language.
    for turn in debate["turns"]:
        name = turn["speaker_names"]["en"]  # the debate's language, whatever the token's
        heading = f"### Round {turn['round']} · {name}" if turn["round"] else f"### {name}"
        assert heading in thinking, (heading, thinking[:500])
        assert turn["text"].strip() and turn["text"].strip() in thinking
    assert thinking.index(debate["turns"][0]["text"].strip()) < thinking.index(debate["turns"][-1]["text"].strip())
    # The answer is the report's verdict and the page; the speeches are not repeated in it.
    report = alice.get(f"/debates/{debate['id']}/export.md", params={"part": "report"}).text  # the debate's language
    assert answer.startswith("# Duel\n\n**Question**: ") and summary["links"]["page"] in answer
    assert report.split("\n\n")[2] in answer  # the report's paragraphs, as the export has them
    assert debate["turns"][0]["text"].strip() not in answer
    # The debate's own tokens, as the API counts them.
    assert usage.prompt_tokens == debate["tokens"]["prompt"] > 0
    assert usage.completion_tokens == debate["tokens"]["completion"] > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # The system message reached the speakers as "About you".
    assert debate["options"]["user_context"] == "I lead the team; we ship a mobile app."
    assert any("I lead the team" in json.dumps(r.body, ensure_ascii=False) for r in fake_llm.chat_requests)


def test_a_completion_without_streaming_and_in_chinese(agora, fake_llm, tokens, alice):
    reply = client(agora, tokens["alice"]).chat.completions.create(
        model="agora-duel",
        messages=[{"role": "user", "content": "念佛与参禅，哪条路更适合现代人修行？"}],
        extra_body={"agora": MASTERS},
    )
    summary = newest(alice)
    debate = alice.get(f"/debates/{summary['id']}").json()
    message = reply.choices[0].message
    thinking = message.model_extra["reasoning_content"]
    assert reply.object == "chat.completion" and reply.choices[0].finish_reason == "stop"
    assert debate["status"] == "done" and "### 第 1 轮 · " in thinking and "Round" not in thinking
    assert all(t["text"].strip() in thinking for t in debate["turns"])
    assert all(
        f"### 第 {t['round']} 轮 · {t['speaker_names']['zh-hans']}" in thinking for t in debate["turns"] if t["round"]
    )
    assert summary["links"]["page"] in message.content and "辩论全文" in message.content
    assert reply.usage.total_tokens == debate["tokens"]["prompt"] + debate["tokens"]["completion"] > 0


def test_refusals_arrive_as_the_sdks_own_errors(agora, fake_llm, tokens, alice):
    chat = client(agora, tokens["alice"]).chat.completions
    with pytest.raises(openai.BadRequestError) as bad:
        chat.create(
            model="agora-duel",
            messages=[{"role": "user", "content": QUESTION}],
            extra_body={"agora": {**MASTERS, "rounds": 99}},
        )
    assert bad.value.body["param"] == "agora.rounds" and bad.value.body["message"]
    with pytest.raises(openai.NotFoundError) as missing:
        chat.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    assert missing.value.body["code"] == "model_not_found"
    with pytest.raises(openai.AuthenticationError):
        client(agora, "not-a-token").chat.completions.create(
            model="agora-duel", messages=[{"role": "user", "content": QUESTION}]
        )
    listed = [m.id for m in client(agora, tokens["alice"]).models.list()]
    assert {"agora-duel", "agora-panel", "agora-roundtable", "agora-moderated"} <= set(listed)


def test_the_running_limit_holds_and_a_hang_up_stops_nothing(agora, fake_llm, tokens, alice):
    fake_llm.token_delay = 0.05  # slow enough to hang up mid-debate, and to fill the limit
    chat = client(agora, tokens["alice"]).chat.completions
    body = {
        "model": "agora-duel",
        "messages": [{"role": "user", "content": QUESTION}],
        "extra_body": {"agora": MASTERS},
    }
    stream = chat.create(stream=True, **body)
    for chunk in stream:
        if chunk.choices and (chunk.choices[0].delta.model_extra or {}).get("reasoning_content"):
            break
    stream.close()  # the client hangs up after the first words
    hung_up = newest(alice)["id"]
    others = [alice.post("/debates", {"topic": QUESTION, "format": "duel", **MASTERS}) for _ in range(2)]
    assert [o.status_code for o in others] == [201, 201]  # three running: the default limit
    with pytest.raises(openai.RateLimitError) as refused:
        chat.create(**body)
    assert refused.value.body["code"] == "rate_limit_exceeded" and "3" in refused.value.body["message"]
    fake_llm.token_delay = 0.0
    assert finished(alice, hung_up)["status"] == "done"  # the debate went on without its client
    for other in others:
        finished(alice, other.json()["id"])


def test_open_webuis_model_list_request(agora, tokens):
    """The request Open WebUI sends when a connection is added, replayed as stored."""
    stored = json.loads((DATA / "open_webui_models_request.json").read_text())
    headers = {
        k: v.replace("{token}", tokens["alice"]).replace("{host}", agora.url.split("//")[1])
        for k, v in stored["headers"].items()
    }
    response = httpx2.request(stored["method"], f"{agora.url}/openai/v1{stored['path']}", headers=headers)
    assert response.status_code == 200
    models = response.json()["data"]  # what Open WebUI reads
    assert {m["id"] for m in models} >= {"agora-duel", "agora-panel"}
    # Open WebUI shows `name` where there is one, else the id: ours are the ids, owned by Agora.
    assert all(m["object"] == "model" and "name" not in m and m["owned_by"] == "agora" for m in models)
