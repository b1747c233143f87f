"""A reasoning model's thinking (issue 26): shown apart, never stored as the speech.

Over real loopback HTTP (the fake OpenAI server thinking before it answers, in each way servers
send thinking), a one-round duel keeps each turn's thinking on `Turn.thinking`, and none of it in
a turn's text, summary, data, the report, the Markdown export (unless asked: `?thinking=1`) or any
later prompt; the live frames stream it into the turn's own collapsed part; a reload draws it
collapsed; the JSON export and the API carry it; the ledger and the meter count its tokens as
output. The request side: a provider's or seat's reasoning effort reaches the request, and what a
server refused is kept on the provider row once and spares the next debate the error."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.test import Client, override_settings
from django.utils import translation

from debates import clients, frames, runner
from debates.engine import events as ev
from debates.exports import export_markdown, export_payload
from debates.forms import create_debate, form_for
from debates.models import Debate, Provider, Report, Turn
from debates.sink import DjangoSink
from testkit.fake_openai import FakeOpenAIServer, Fault, Reply

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "念佛与参禅，哪条路更适合现代人修行？"
MARK = "ZQXTHINK"  # in every piece of thinking, never in anything else the server sends
UNTRUSTED = '<script>alert("x")</script>'


def thinking_of(body: dict) -> str:
    n = len(body.get("messages", []))
    return f"{MARK} weighing the question, step {n}: first the premises, then {UNTRUSTED} and the answer."


def thinker(style: str):
    return lambda body: Reply(thinking=thinking_of(body), thinking_as=style)


async def run_duel(owner, **values) -> Debate:
    debate, errors = await database_sync_to_async(create_debate)(
        {"topic": QUESTION, "format": "duel", "rounds": 1, **values}, owner
    )
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    return await Debate.objects.aget(pk=debate.pk)


def _everything_but_thinking(debate: Debate) -> str:
    """Every stored word of the debate a reader or a later turn could meet, but the turns' own
    thinking: texts, summaries, data, messages sent, the report."""
    turns = list(debate.turns.values("text", "summary", "data", "messages", "history", "error"))
    report = Report.objects.filter(debate=debate).values("verdict_markdown", "transcript_markdown", "data").first()
    return json.dumps([turns, report, debate.warnings, debate.phases], ensure_ascii=False)


@pytest.mark.parametrize("style", ["reasoning_content", "reasoning", "tags"])
async def test_thinking_is_kept_on_the_turn_and_nowhere_else(style, libraries, fast_llm, alice):
    fast_llm.script = thinker(style)
    debate = await run_duel(alice)
    turns = [t async for t in Turn.objects.filter(debate=debate)]
    assert turns and all(t.state == "done" for t in turns)
    speeches = [t for t in turns if t.phase != "search"]
    assert all(MARK in t.thinking for t in speeches), "each turn keeps its thinking"
    assert all(t.text.strip() and "<think>" not in t.text for t in speeches), "the answer is the speech"
    stored = await database_sync_to_async(_everything_but_thinking)(debate)
    assert MARK not in stored, "no text, summary, data, prompt or report holds thinking"
    for request in fast_llm.requests:  # no later speaker reads anyone's thinking
        assert MARK not in json.dumps(request.body, ensure_ascii=False)

    # The exports: the JSON has each turn's thinking apart; the Markdown none unless asked.
    payload = await database_sync_to_async(export_payload)(debate, alice)
    assert all(MARK in t["thinking"] and MARK not in t["text"] for t in payload["turns"])
    markdown = await database_sync_to_async(export_markdown)(debate, alice)
    assert MARK not in markdown
    client = Client()
    await sync_to_async(client.force_login)(alice)
    plain = await sync_to_async(client.get)(f"/debates/{debate.pk}/export.md")
    asked = await sync_to_async(client.get)(f"/debates/{debate.pk}/export.md?thinking=1")
    assert plain.status_code == asked.status_code == 200
    assert MARK not in plain.content.decode()
    shown = asked.content.decode()
    # The transcript is in the question's language (Chinese here): its "Thinking" label too.
    with translation.override("zh-hans"):
        label = f"*{translation.gettext('Thinking')}*:"
    assert shown.count(MARK) == len(speeches) and label in shown and label != "*Thinking*:"
    assert "<script>" not in shown, "thinking is untrusted text: inert in the Markdown too"

    # Its tokens: output, priced and counted as such, told apart in the ledger.
    assert all(t.reasoning_tokens > 0 and t.completion_tokens > t.reasoning_tokens for t in speeches)
    assert debate.reasoning_tokens == sum(t.reasoning_tokens for t in turns)
    assert debate.completion_tokens >= sum(t.completion_tokens for t in turns)
    report = await Report.objects.aget(debate=debate)
    assert report.data["ledger"]["reasoning_tokens"] == debate.reasoning_tokens
    page = (
        await sync_to_async(client.get)(f"/debates/{debate.pk}/report/", HTTP_ACCEPT_LANGUAGE="en")
    ).content.decode()
    assert f"of which thinking: {debate.reasoning_tokens}" in page, "the ledger's total tells thinking apart"


async def test_thinking_counts_against_the_token_cap_and_the_money(libraries, fast_llm, alice):
    """Thinking tokens are output: the same debate costs more, and uses more of its cap, when
    its model thinks (completion_tokens include the thinking's, as servers count them)."""
    plain = await run_duel(alice)
    fast_llm.script = thinker("reasoning_content")
    thought = await run_duel(alice)
    assert thought.reasoning_tokens > 0 and plain.reasoning_tokens == 0
    assert thought.completion_tokens >= plain.completion_tokens + thought.reasoning_tokens - 50
    report = await Report.objects.aget(debate=thought)
    ledger = report.data["ledger"]
    assert ledger["counted_against_cap"] >= ledger["prompt_tokens"] + ledger["completion_tokens"] - 1
    assert ledger["completion_tokens"] >= ledger["reasoning_tokens"]


async def test_a_resumed_debate_keeps_the_thinking_tokens_of_its_replayed_turns(libraries, fast_llm, alice):
    fast_llm.script = thinker("reasoning_content")
    prompts: list[str] = []

    def second_turn(body: dict) -> bool:
        prompt = json.dumps(body.get("messages"), ensure_ascii=False)
        prompts.extend([prompt] if prompt not in prompts else [])
        return prompts.index(prompt) == 1

    fast_llm.inject(Fault.disconnect(after=3), times=1, when=second_turn)
    debate, errors = await database_sync_to_async(create_debate)(
        {"topic": QUESTION, "format": "duel", "rounds": 1}, alice
    )
    assert not errors
    assert await runner.execute(debate.pk) == "failed"
    failed = await Turn.objects.aget(debate=debate, state="failed")
    assert MARK in failed.thinking and failed.reasoning_tokens > 0, "a failed turn keeps the thinking it streamed"
    assert await runner.execute(debate.pk) == "done"
    report = await Report.objects.aget(debate=debate)
    turns = [t async for t in Turn.objects.filter(debate=debate)]
    assert report.data["ledger"]["reasoning_tokens"] == sum(t.reasoning_tokens for t in turns)


async def _frames_of(debate_id: int, language: str, run) -> list[dict]:
    """Every frame the debate's `language` group received while `run()` ran."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(frames.group(debate_id, language), channel)
    await run()
    got = []
    while True:
        try:
            got.append(await asyncio.wait_for(layer.receive(channel), 0.2))
        except TimeoutError:
            return got


async def test_live_frames_stream_thinking_into_its_own_part(libraries, fast_llm, alice):
    fast_llm.script = thinker("reasoning_content")
    fast_llm.token_delay = 0.002
    debate, errors = await database_sync_to_async(create_debate)(
        {"topic": QUESTION, "format": "duel", "rounds": 1}, alice
    )
    assert not errors

    async def run():
        assert await runner.execute(debate.pk) == "done"

    with override_settings(CHANNEL_LAYERS={"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}):
        got = await _frames_of(debate.pk, "en", run)
    html = "".join(f["html"] for f in got)
    first = await Turn.objects.filter(debate=debate).order_by("position").afirst()
    thinking_frames = re.findall(rf'<div hx-swap-oob="beforeend:#turn-{first.pk}-thinking">(.*?)</div>', html, re.S)
    assert thinking_frames and MARK in "".join(thinking_frames), "thinking streams live, into its own part"
    text_frames = re.findall(rf'<div hx-swap-oob="beforeend:#turn-{first.pk}-text">(.*?)</div>', html, re.S)
    assert text_frames and MARK not in "".join(text_frames), "never into the speech"
    assert "<script>" not in html and "&lt;script&gt;" in "".join(thinking_frames), "escaped like speeches"
    # The running turn's article has the (empty, hidden) part the thinking streams into.
    assert f'id="turn-{first.pk}-thinking"' in html
    assert "of which thinking:" in html, "the meter counts the thinking as it streams"
    # The finished turn: its whole thinking, collapsed.
    finished = re.findall(r'<details class="thinking"[^>]*>', html)
    assert finished and all(" open" not in tag for tag in finished)


async def test_reload_draws_thinking_collapsed_in_both_languages(libraries, fast_llm, alice):
    fast_llm.script = thinker("tags")
    debate = await run_duel(alice)
    for language, summary in (("en", "Thinking"), ("zh-hans", None)):
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        await sync_to_async(client.force_login)(alice)
        page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/")).content.decode()
        parts = re.findall(r'<details class="thinking"[^>]*>\s*<summary>(.*?)</summary>(.*?)</details>', page, re.S)
        assert len(parts) == await Turn.objects.filter(debate=debate).acount()
        assert all(MARK in body and "&lt;script&gt;" in body and "<script>" not in body for _, body in parts)
        assert not re.search(r'<details class="thinking"[^>]* open', page), "closed by default"
        if summary:
            assert all(s == summary for s, _ in parts)
        for t in [t async for t in Turn.objects.filter(debate=debate)]:
            speech = re.search(rf'<article id="turn-{t.pk}".*?<div class="text md">(.*?)</div>', page, re.S)
            assert speech and MARK not in speech.group(1)
    # The WebSocket catch-up draws the same.
    snap = await database_sync_to_async(frames.snapshot)(debate.pk)
    caught_up = await database_sync_to_async(frames.full_in)(snap, "en")
    assert caught_up.count('<details class="thinking"') == len(parts) and MARK in caught_up


async def test_api_detail_and_export_carry_thinking_apart(libraries, fast_llm, alice):
    from debates.api import tokens

    fast_llm.script = thinker("reasoning")
    debate = await run_duel(alice)
    token = await database_sync_to_async(lambda: tokens.issue(alice, "t")[1])()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    detail = (await sync_to_async(client.get)(f"/api/v1/debates/{debate.pk}")).json()
    assert all(MARK in t["thinking"] and MARK not in t["text"] and t["reasoning_tokens"] > 0 for t in detail["turns"])
    assert detail["tokens"]["reasoning"] == debate.reasoning_tokens
    plain = await sync_to_async(client.get)(f"/api/v1/debates/{debate.pk}/export.md")
    asked = await sync_to_async(client.get)(f"/api/v1/debates/{debate.pk}/export.md?thinking=true")
    assert MARK not in plain.content.decode() and MARK in asked.content.decode()


async def test_a_failed_turn_keeps_its_thinking_and_late_pieces_are_not_shown_again(db):
    """The sink: thinking that arrives for a turn already ended is dropped (its row holds all of
    it), and a failed turn keeps the thinking it streamed."""
    debate = await Debate.objects.acreate(question="q", format="duel")
    sink = DjangoSink(debate.pk, frame_interval=60)
    await sink.open()
    await sink.emit(ev.TurnStarted("k", 1, "duel", "a", "A", [{"role": "user", "content": "q"}]))
    await sink.emit(ev.ThinkingDelta("k", "first thoughts "))
    await sink.emit(ev.TextDelta("k", "Half a speech"))
    await sink.flush()
    turn = await Turn.objects.aget(debate=debate, key="k")
    assert (turn.thinking, turn.text) == ("first thoughts ", "Half a speech")
    await sink.emit(ev.TurnFailed("k", "HTTP 500", "Half a speech", 10, 5, 0.0, partial_thinking="first thoughts more"))
    await sink.emit(ev.ThinkingDelta("k", "late"))
    await sink.flush()
    turn = await Turn.objects.aget(debate=debate, key="k")
    assert turn.thinking == "first thoughts more" and turn.state == "failed"
    assert not sink.thinking_pending


# -- the request side: reasoning effort and what a server refused -------------------------------


def test_the_start_form_offers_reasoning_effort_for_reasoning_models_only(libraries, settings):
    settings.OPENAI_BASE_URL, settings.AGORA_MODEL = "http://127.0.0.1:9/v1", "gpt-4o-mini"
    base = {"topic": QUESTION, "format": "duel", "rounds": 1, "personas": ["huineng", "yinguang"]}
    refused = form_for({**base, "reasoning_effort": "high"})
    assert not refused.is_valid() and "reasoning_effort" in refused.errors
    assert "gpt-4o-mini" in refused.errors["reasoning_effort"][0]
    chosen = form_for({**base, "model": "o4-mini", "reasoning_effort": "high", "seat_models": "yinguang = o3 low"})
    assert chosen.is_valid(), chosen.errors
    wrong_seat = form_for({**base, "seat_models": "yinguang = gpt-4o high"})
    assert not wrong_seat.is_valid() and "seat_models" in wrong_seat.errors
    debate, errors = create_debate(
        {**base, "model": "o4-mini", "reasoning_effort": "high", "seat_models": "yinguang = o3 low"}
    )
    assert not errors
    assert debate.reasoning_effort == "high"
    seats = {s.persona.slug: s for s in debate.seats.select_related("persona")}
    assert (seats["yinguang"].model, seats["yinguang"].reasoning_effort) == ("o3", "low")
    pool = clients.clients_for(debate)
    assert pool.default.reasoning_effort == "high" and pool.default.model == "o4-mini"
    assert pool.get(clients.seat_key(None, "o3", "low")).reasoning_effort == "low"


def test_the_api_takes_reasoning_effort_by_the_same_name(libraries, alice, settings, no_runs):
    from debates.api import tokens

    settings.OPENAI_BASE_URL, settings.AGORA_MODEL = "http://127.0.0.1:9/v1", "o4-mini"
    settings.AGORA_DEFAULT_MODELS = ["gpt-5-mini", "o3", "gpt-4o-mini"]  # offered to users who are not staff
    _, token = tokens.issue(alice, "t")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {
        "topic": QUESTION,
        "format": "duel",
        "personas": ["huineng", "yinguang"],
        "reasoning_effort": "medium",
        "seat_models": {"yinguang": {"model": "gpt-5-mini", "reasoning_effort": "low"}, "huineng": "o3 high"},
    }
    made = client.post("/api/v1/debates", json.dumps(body), content_type="application/json")
    assert made.status_code == 201, made.content
    debate = Debate.objects.get(pk=made.json()["id"])
    assert debate.reasoning_effort == "medium"
    efforts = dict(debate.seats.values_list("persona__slug", "reasoning_effort"))
    assert efforts == {"yinguang": "low", "huineng": "high"}
    wrong = client.post(
        "/api/v1/debates", json.dumps({**body, "model": "gpt-4o-mini"}), content_type="application/json"
    )
    assert wrong.status_code == 422 and "reasoning_effort" in wrong.content.decode()


async def test_a_provider_learns_once_and_sends_its_effort(libraries, alice):
    """A reasoning model whose name does not say so (a deployment's own name) behind a provider
    row: the first debate pays each 400 once and keeps what it learnt on the row (shown in the
    admin); the next debate's first request already has the right shape, with the provider's
    reasoning effort."""
    with FakeOpenAIServer(openai_reasoning=["house-model"]) as server:
        provider = await Provider.objects.acreate(
            name="oai", base_url=server.base_url, default_model="house-model", reasoning_effort="low"
        )
        with override_settings(AGORA_PROVIDER_RETRIES=1, AGORA_PROVIDER_BACKOFF=0.01):
            first = await run_duel(alice, provider=provider.pk)  # its end waits for the row's write
            refused = [r for r in server.requests if r.status == 400]
            assert refused, "the first debate met the server's refusals"
            await provider.arefresh_from_db()
            learnt = provider.learnt_params["house-model"]
            assert learnt.get("max_tokens") == "max_completion_tokens"
            server.reset()
            second = await run_duel(alice, provider=provider.pk)
        assert first.status == second.status == "done"
        assert not [r for r in server.requests if r.status == 400], "learnt once: no 400 the second time"
        body = server.requests[0].body
        assert "max_tokens" not in body and "max_completion_tokens" in body
        assert body.get("reasoning_effort") == "low"

    # The admin shows it, read-only.
    from debates.admin import ProviderAdmin

    assert "max_completion_tokens" in ProviderAdmin.learnt(None, provider)
    assert "learnt" in ProviderAdmin.readonly_fields


async def test_a_moderated_debate_on_a_think_tag_model_keeps_every_speech_clean(libraries, fast_llm, alice):
    """`<think>…</think>` in the content (a reasoning model behind a server without a reasoning
    parser): the moderator's and the debaters' speeches, the summaries, the parts and the report
    hold none of it, and no later prompt does."""
    fast_llm.script = thinker("tags")
    values = {"topic": QUESTION, "format": "moderated", "personas": ["socrates", "confucius"]}
    debate, errors = await database_sync_to_async(create_debate)(values, alice)
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    turns = [t async for t in Turn.objects.filter(debate=debate)]
    assert len(turns) >= 4 and all(MARK in t.thinking for t in turns)
    stored = await database_sync_to_async(_everything_but_thinking)(debate)
    assert MARK not in stored and "<think>" not in stored and "</think>" not in stored
    for request in fast_llm.requests:
        assert MARK not in json.dumps(request.body, ensure_ascii=False)


def test_the_admin_shows_what_a_provider_learnt_read_only(superuser, client):
    provider = Provider.objects.create(
        name="oai",
        base_url="https://api.openai.com/v1",
        default_model="house-model",
        learnt_params={"house-model": {"max_tokens": "max_completion_tokens", "temperature": None}},
    )
    client.force_login(superuser)
    page = client.get(f"/admin/debates/provider/{provider.pk}/change/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "what this server refused, learnt from its errors" in page
    assert "house-model: max_tokens → max_completion_tokens; temperature: not sent" in page
    assert 'name="learnt_params"' not in page, "read-only: learnt from the server, not typed"
    assert 'name="reasoning_effort"' in page


async def test_the_event_stream_sends_thinking_with_turn_done_never_in_the_text(libraries, fast_llm, alice):
    from debates.api import changes

    fast_llm.script = thinker("reasoning_content")
    debate = await run_duel(alice)
    follower = changes.Follower(changes.Cursor())
    state = await database_sync_to_async(changes.read)(debate.pk, follower, language="en", internals=False)
    events = list(changes.changes(state, follower))
    texts = [data["text"] for name, data in events if name in ("delta", "replace")]
    done = [data for name, data in events if name == "turn_done"]
    assert texts and all(MARK not in text for text in texts)
    assert done and all(MARK in data["thinking"] for data in done)


@pytest.mark.parametrize("model", ["o4-mini", "gpt-5-mini"])
async def test_a_light_panel_on_an_openai_reasoning_model_ends_done(model, libraries, alice):
    """OpenAI's reasoning models refuse `max_tokens`, a temperature and `stop` (the fake answers
    400 as OpenAI documents) and keep their thinking hidden, only counted: the panel ends `done`,
    its turns' reasoning tokens told apart, no request refused."""
    hidden = lambda body: Reply(thinking=f"{MARK} hidden reasoning " * 5, thinking_as="hidden")  # noqa: E731
    with (
        FakeOpenAIServer(hidden, openai_reasoning=True) as server,
        override_settings(
            OPENAI_BASE_URL=server.base_url, AGORA_MODEL=model, AGORA_PROVIDER_RETRIES=1, AGORA_PROVIDER_BACKOFF=0.01
        ),
    ):
        values = {"topic": "核心交易系统明年该不该迁到云上？", "format": "panel", "research_budget": "light"}
        debate, errors = await database_sync_to_async(create_debate)(values, alice)
        assert not errors, errors
        assert await runner.execute(debate.pk) == "done"
        assert not [r for r in server.requests if r.status == 400]
        assert all("max_tokens" not in r.body and "stop" not in r.body for r in server.requests)
    debate = await Debate.objects.aget(pk=debate.pk)
    turns = [t async for t in Turn.objects.filter(debate=debate)]
    assert all(t.reasoning_tokens > 0 and not t.thinking for t in turns), "hidden thinking: counted, not shown"
    assert debate.reasoning_tokens == sum(t.reasoning_tokens for t in turns)
