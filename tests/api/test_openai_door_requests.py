"""The OpenAI-compatible door's reading of requests, in process (Django's test client): the model
list, the model ids, and every request it cannot take refused as OpenAI's API refuses, with the
parameter named. Nothing here starts a debate's run (`no_runs`)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from debates.api import tokens
from debates.as_model.request import parse
from debates.models import Debate, Provider

pytestmark = pytest.mark.django_db
QUESTION = "Should our ten-person team move to a four-day week next quarter?"


@pytest.fixture
def token(django_user_model):
    # tests/api's `alice` is an API client: this module's user is made here.
    carol = django_user_model.objects.create_user("carol", password="x")
    return tokens.issue(carol, "chat client")[1]


def post(token: str | None, body) -> tuple[int, dict]:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    raw = body if isinstance(body, str) else json.dumps(body)
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post(
        "/openai/v1/chat/completions", raw, content_type="application/json", **headers
    )
    return response.status_code, response.json()


def ask(**changes) -> dict:
    return {"model": "agora-duel", "messages": [{"role": "user", "content": QUESTION}], **changes}


def test_no_token_is_a_401_as_openai_sends_it(libraries, token):
    for bearer in (None, token[:-2] + "xx"):
        status, body = post(bearer, ask())
        assert status == 401 and body["error"]["code"] == "invalid_api_key", body
        assert "API token" in body["error"]["message"]
    response = Client().get("/openai/v1/models")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"


def test_the_model_list_has_a_model_per_format_and_per_approved_providers_model(token):
    Provider.objects.create(
        name="deepseek", base_url="https://api.deepseek.com/v1", default_model="deepseek-chat", approved=True
    )
    Provider.objects.create(
        name="ollama", base_url="http://127.0.0.1:11434/v1", default_model="qwen3:8b", approved=True
    )
    Provider.objects.create(name="other", base_url="http://127.0.0.1:9/v1", default_model="qwen3:8b", approved=True)
    Provider.objects.create(
        name="unapproved", base_url="http://127.0.0.1:8/v1", default_model="secret-model", approved=False
    )
    response = Client(HTTP_ACCEPT_LANGUAGE="en").get("/openai/v1/models", HTTP_AUTHORIZATION=f"Bearer {token}")
    listing = response.json()
    assert listing["object"] == "list"
    ids = [m["id"] for m in listing["data"]]
    for fmt in ("duel", "panel", "roundtable", "moderated"):
        assert f"agora-{fmt}" in ids
        assert f"agora-{fmt}:deepseek-chat" in ids
        # Two providers serve a model of one name: each is named with its provider.
        assert f"agora-{fmt}:ollama/qwen3:8b" in ids and f"agora-{fmt}:other/qwen3:8b" in ids
    assert not [i for i in ids if "secret-model" in i]
    assert all(m["object"] == "model" and m["owned_by"] == "agora" and m["description"] for m in listing["data"])
    one = Client().get("/openai/v1/models/agora-panel:deepseek-chat", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert one.status_code == 200 and one.json()["id"] == "agora-panel:deepseek-chat"
    missing = Client().get("/openai/v1/models/gpt-4o", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_a_model_id_names_the_format_provider_and_model():
    Provider.objects.create(
        name="deepseek", base_url="https://api.deepseek.com/v1", default_model="deepseek-chat", approved=True
    )
    Provider.objects.create(
        name="ollama", base_url="http://127.0.0.1:11434/v1", offered_models=["qwen3:8b"], approved=True
    )
    read = {
        m: parse(json.dumps(ask(model=m)).encode()).body
        for m in (
            "agora-panel",
            "agora-panel:deepseek-chat",
            "agora-panel:ollama/qwen3:8b",
            "agora-duel:qwen3:8b",
            "agora-duel:llama3.3",
        )
    }
    assert read["agora-panel"]["format"] == "panel" and "provider" not in read["agora-panel"]
    assert (read["agora-panel:deepseek-chat"]["provider"], read["agora-panel:deepseek-chat"]["model"]) == (
        "deepseek",
        "deepseek-chat",
    )
    assert (read["agora-panel:ollama/qwen3:8b"]["provider"], read["agora-panel:ollama/qwen3:8b"]["model"]) == (
        "ollama",
        "qwen3:8b",
    )
    assert read["agora-duel:qwen3:8b"]["provider"] == "ollama"  # an offered model finds its provider
    # A model no provider lists goes to the server's default provider, which may serve it.
    assert "provider" not in read["agora-duel:llama3.3"] and read["agora-duel:llama3.3"]["model"] == "llama3.3"


def test_the_conversation_becomes_about_you_and_material():
    messages = [
        {"role": "system", "content": "I run a ten-person agency; cash for six months."},
        {"role": "user", "content": "What should we cut first?"},
        {"role": "assistant", "content": "Travel, then tools."},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
    ]
    body = parse(json.dumps(ask(messages=messages, agora={"rounds": 2})).encode()).body
    assert body["topic"] == QUESTION and body["rounds"] == 2
    assert body["user_context"] == "I run a ten-person agency; cash for six months."
    assert body["evidence"].splitlines()[0] == "Earlier in this conversation:"
    assert (
        "User: What should we cut first?" in body["evidence"] and "Assistant: Travel, then tools." in body["evidence"]
    )
    # Too long for the material: the latest turns are kept, and the cut is said.
    long = [{"role": "user", "content": f"msg{i:02d} " + "x" * 3000} for i in range(12)] + [
        {"role": "user", "content": QUESTION}
    ]
    evidence = parse(json.dumps(ask(messages=long)).encode()).body["evidence"]
    assert len(evidence) <= 20000 and "(earlier messages left out)" in evidence
    assert "msg11" in evidence and "msg00" not in evidence
    chinese = parse(
        json.dumps(ask(messages=[messages[1], messages[2], {"role": "user", "content": "远程办公值得吗？"}])).encode()
    )
    assert (
        chinese.body["evidence"].startswith("此前的对话:")
        and "用户: What should we cut first?" in chinese.body["evidence"]
    )


@pytest.mark.parametrize(
    ("body", "status", "param", "words"),
    [
        ("{not json", 400, None, "parse the JSON"),
        (ask(model=None), 400, "model", "model parameter"),
        (ask(model="gpt-4o"), 404, "model", "does not exist"),
        (ask(model="agora-debate-club"), 404, "model", "does not exist"),
        (ask(messages=[]), 400, "messages", "non-empty"),
        (
            ask(messages=[{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "ok"}]),
            400,
            "messages[1]",
            "last message",
        ),
        (ask(messages=[{"role": "wizard", "content": QUESTION}]), 400, "messages[0].role", "role"),
        (
            ask(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]),
            400,
            "messages[0].content",
            "text only",
        ),
        (ask(messages=[{"role": "user", "content": "   "}]), 400, "messages[0]", "last message"),
        (ask(messages=[{"role": "user", "content": "x" * 1001}]), 400, "messages", "1000"),
        (
            ask(messages=[{"role": "system", "content": "y" * 2001}, {"role": "user", "content": QUESTION}]),
            400,
            "messages",
            "2000",
        ),
        (ask(n=3), 400, "n", "one debate"),
        (ask(agora="rounds=2"), 400, "agora", "object"),
        (ask(agora={"rounds": 99}), 400, "agora.rounds", "At most 8 rounds"),
        (ask(agora={"rounds": "many"}), 400, "agora.rounds", "whole number"),
        (ask(agora={"roundz": 2}), 400, "agora.roundz", "No such field"),
        (ask(agora={"personas": ["nobody-at-all"]}), 400, "agora.personas", "not in the libraries"),
        (ask(agora={"topic": "another question"}), 400, "agora.topic", "Set by the request"),
    ],
)
def test_a_request_it_cannot_take_is_refused_as_openai_refuses(libraries, token, no_runs, body, status, param, words):
    got, reply = post(token, body)
    error = reply["error"]
    assert got == status and error["param"] == param, reply
    assert error["type"] == "invalid_request_error" and error["message"] and words in error["message"], reply
    assert no_runs == [] and not Debate.objects.exists()


def test_other_openai_parameters_are_taken_and_left():
    """What chat clients send with every request (sampling, a token limit, a user id) is not Agora's
    to refuse: the debate's own options travel in `agora`."""
    sent = ask(temperature=0.3, top_p=0.9, max_tokens=512, user="u-1", stream=True, presence_penalty=0)
    chat = parse(json.dumps({**sent, "stream_options": {"include_usage": True}}).encode())
    assert chat.body == {"topic": QUESTION, "format": "duel"}
    assert chat.stream and chat.include_usage and chat.model == "agora-duel"


def test_the_tokens_page_says_where_a_token_works(django_user_model, settings):
    """A person who made a token learns the three doors' addresses as this server is reached."""
    settings.ALLOWED_HOSTS = ["agora.example.org"]
    dave = django_user_model.objects.create_user("dave", password="x")
    client = Client(HTTP_ACCEPT_LANGUAGE="en", HTTP_HOST="agora.example.org")
    client.force_login(dave)
    page = client.get("/accounts/tokens/", secure=True).content.decode()
    for address in (
        "https://agora.example.org/api/v1/",
        "https://agora.example.org/openai/v1",
        "https://agora.example.org/mcp/",
    ):
        assert f"<code>{address}</code>" in page, address
    assert '<code class="model">agora-panel</code>' in page


def test_a_door_nobody_answers_runs_the_roundtable_through_its_checkpoint(libraries, django_user_model, no_runs):
    """The chat door and the MCP server start with `unattended=True`: a roundtable would otherwise
    wait at its checkpoint for an answer neither can give."""
    from debates.api import starting

    erin = django_user_model.objects.create_user("erin", password="x")
    body = {"topic": "我们的客服产品要不要引入 RAG 知识库？", "format": "roundtable", "mode": "quick"}
    for door, unattended in (("mcp.start", True), ("api.start", False)):
        debate = starting.start(body, erin, door=door, unattended=unattended)
        assert bool(debate.options.get("no_interrupt")) is unattended, (door, debate.options)


@pytest.mark.parametrize("depth", [500, 950, 100_000])
def test_deeply_nested_json_is_a_400_not_a_500(libraries, token, no_runs, depth):
    """Hardening round three (low): `[[[…]]]` nested past Python's recursion limit in the body, or
    deep enough to parse but not to walk, in `agora` and in a message's content, was a 500."""
    nested = "[" * depth + "]" * depth
    for where in ("messages", "agora", "content"):
        if where == "messages":
            raw = '{"model": "agora-duel", "messages": ' + nested + "}"
        elif where == "agora":
            raw = json.dumps(ask())[:-1] + ', "agora": {"rounds": ' + nested + "}}"
        else:
            raw = '{"model": "agora-duel", "messages": [{"role": "user", "content": [' + nested + "]}]}"
        got, reply = post(token, raw)
        assert got == 400 and reply["error"]["message"], (where, got, reply)
    assert no_runs == [] and not Debate.objects.exists()
