"""The conformance suite: for every provider family we claim to support, a one-round duel runs
through the real stack (the runner, the OpenAI-compatible provider, real loopback HTTP) against a
server that replays the family's stream as its public API reference documents it
(testkit/conformance/<family>.json): its chunk shapes, where the usage comes, where the thinking
arrives, the request shapes it refuses and the error bodies it refuses them with.

Each duel must end `done` with the speech the server sent as each turn's text, the server's usage
on each turn, and the thinking kept apart: on the turn where the family thinks, and nowhere else
(no stored text, summary, report, export or later prompt holds any of it).

docs/providers.md's table names every family and its test here; `test_docs_table_*` keeps the two
in step.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from django.test import override_settings

from debates import runner
from debates.exports import export_markdown, export_payload
from debates.forms import create_debate
from debates.models import Debate, Provider, Report, Turn
from debates.providers.base import estimate_tokens
from testkit.conformance.server import THINKING_MARKER, ReplayServer, families, load, refusal

QUESTION = "念佛与参禅，哪条路更适合现代人修行？"
FAMILIES = families()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
TEST_ID = "tests/providers/test_conformance.py::test_one_round_duel[{family}]"


def _without_thinking(value):
    """The JSON export with the turns' own thinking field left out (the one place it belongs)."""
    if isinstance(value, dict):
        return {k: _without_thinking(v) for k, v in value.items() if k != "thinking"}
    if isinstance(value, list):
        return [_without_thinking(v) for v in value]
    return value


def _usage_sent(transcript: dict, exchange) -> bool:
    """Whether the replayed stream carried the usage (some families only when asked)."""
    asked = bool((exchange.body.get("stream_options") or {}).get("include_usage"))
    for item in transcript["stream"]:
        if "$usage" in json.dumps(item.get("data", "")) and (item.get("if") != "include_usage" or asked):
            return True
    return False


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("family", FAMILIES)
async def test_one_round_duel(family, libraries, alice):
    transcript = load(family)
    expect = transcript["expect"]
    with (
        ReplayServer(family) as server,
        override_settings(
            OPENAI_BASE_URL=server.base_url,
            AGORA_MODEL=transcript["model"],
            AGORA_PROVIDER_TIMEOUT=10,
            AGORA_PROVIDER_RETRIES=2,
            AGORA_PROVIDER_BACKOFF=0.01,
        ),
    ):
        debate, errors = await database_sync_to_async(create_debate)(
            {"topic": QUESTION, "format": "duel", "rounds": 1}, alice
        )
        assert not errors, errors
        outcome = await runner.execute(debate.pk)

        def stored():
            d = Debate.objects.get(pk=debate.pk)
            turns = list(Turn.objects.filter(debate_id=debate.pk).order_by("position"))
            report = Report.objects.filter(debate_id=debate.pk).first()
            return d, turns, report, export_markdown(d, alice, "both"), export_payload(d, alice)

        debate, turns, report, markdown, payload = await database_sync_to_async(stored)()

    assert outcome == "done", (debate.status_detail, [t.error for t in turns])
    assert [t.state for t in turns] == ["done"] * 3, [(t.key, t.state, t.error) for t in turns]
    for turn in turns:
        sent = [e for e in server.answered if e.messages == turn.messages]
        assert sent, f"{turn.key}: the server never answered this turn's prompt"
        exchange = sent[-1]
        # The answer, and only the answer, is the speech.
        assert turn.text.strip() == exchange.answer.strip(), (turn.key, turn.text)
        # The usage is the server's where it sent one.
        if _usage_sent(transcript, exchange):
            usage = transcript["usage"]
            # Thinking counted only in total_tokens (Gemini) is output too, and the turn's reasoning.
            hidden = expect.get("unreported_thinking_tokens", 0)
            assert (turn.prompt_tokens, turn.completion_tokens) == (
                usage["prompt_tokens"],
                usage["completion_tokens"] + hidden,
            )
            assert not turn.usage_estimated, turn.key
        wanted = expect["reasoning_tokens"]
        if wanted == "estimated":  # no breakdown from the server: counted from the thinking
            assert turn.reasoning_tokens == estimate_tokens(exchange.thinking.strip()) > 0, turn.key
        else:
            assert turn.reasoning_tokens == wanted, turn.key
        # Kept on the turn where the family sends it; nothing where it does not.
        assert turn.thinking.strip() == exchange.thinking.strip(), (turn.key, turn.thinking)

    # The debate's ledger is its turns' (nothing failed, so nothing estimated beside them), the
    # thinking's tokens among the output.
    assert debate.prompt_tokens == sum(t.prompt_tokens for t in turns)
    assert debate.completion_tokens == sum(t.completion_tokens for t in turns)
    assert debate.reasoning_tokens == sum(t.reasoning_tokens for t in turns)
    assert payload["tokens"]["reasoning"] == debate.reasoning_tokens
    assert debate.reasoning_tokens <= debate.completion_tokens

    # No thinking anywhere else: stored text, summaries, the report, both exports, later prompts.
    for turn in turns:
        for where, value in (("text", turn.text), ("summary", turn.summary), ("data", json.dumps(turn.data))):
            assert THINKING_MARKER not in value, (turn.key, where)
    assert report is not None
    assert THINKING_MARKER not in json.dumps(report.data, ensure_ascii=False)
    assert THINKING_MARKER not in (report.verdict_markdown + report.transcript_markdown)
    assert THINKING_MARKER not in markdown
    assert THINKING_MARKER not in json.dumps(_without_thinking(payload), ensure_ascii=False)
    for exchange in server.exchanges:
        assert THINKING_MARKER not in json.dumps(exchange.messages, ensure_ascii=False), "a prompt held thinking"

    # The request shape: nothing the family refuses reached an answered request, and the token
    # limit went in a parameter the family reads (an ignored one leaves the reply unbounded).
    refused_params = {r["param"] for r in transcript["request"]["refuses"]}
    honoured = transcript["request"]["honours_limit"]

    for exchange in server.answered:
        assert refusal(transcript, exchange.body) is None
        if honoured:
            assert any(exchange.body.get(p) for p in honoured), (
                f"{family} reads {honoured} for the token limit; the request sent "
                f"{sorted(k for k in exchange.body if 'token' in k)}"
            )
    refusals = [e.refused for e in server.exchanges if e.status != 200]
    if expect["errors"] == "learn_once":
        # Learnt from the server's 400s, each parameter once for this provider and model.
        assert refusals and len(refusals) == len(set(refusals)), refusals
        assert set(refusals) <= refused_params
    else:
        assert refusals == [], f"{family} refused {refusals}: the request shape should be known by the model's name"


@pytest.mark.django_db(transaction=True)
async def test_what_a_provider_learnt_is_not_paid_again_by_the_next_debate(libraries, alice):
    """A reasoning deployment whose name says nothing (Azure): the first debate learns from the
    400s, each parameter once; the next debate on the same Provider row and model pays none."""
    family = "azure-openai-reasoning"
    transcript = load(family)
    with (
        ReplayServer(family) as server,
        override_settings(AGORA_PROVIDER_RETRIES=2, AGORA_PROVIDER_BACKOFF=0.01),
    ):
        provider = await database_sync_to_async(Provider.objects.create)(
            name="azure", base_url=server.base_url, default_model=transcript["model"], timeout=10
        )
        outcomes, errors_per_debate = [], []
        for _ in range(2):
            before = len(server.exchanges)
            debate, errors = await database_sync_to_async(create_debate)(
                {"topic": QUESTION, "format": "duel", "rounds": 1, "provider": provider.pk}, alice
            )
            assert not errors, errors
            outcomes.append(await runner.execute(debate.pk))
            errors_per_debate.append([e.refused for e in server.exchanges[before:] if e.status != 200])

    assert outcomes == ["done", "done"]
    first, second = errors_per_debate
    assert first and len(first) == len(set(first)), first
    assert second == [], f"the second debate paid {second} again"
    provider = await database_sync_to_async(Provider.objects.get)(pk=provider.pk)
    assert transcript["model"] in provider.learnt_params, provider.learnt_params


# -- the docs table ---------------------------------------------------------------------------------

ROW = re.compile(r"^\|\s*`(?P<family>[a-z0-9-]+)`\s*\|(?P<rest>.*)\|\s*$")


def _table_rows() -> dict[str, str]:
    rows = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows[match["family"]] = match["rest"]
    return rows


def test_docs_table_names_every_family_and_its_test():
    rows = _table_rows()
    assert sorted(rows) == FAMILIES, "docs/providers.md's table and testkit/conformance/ name different families"
    for family, rest in rows.items():
        assert TEST_ID.format(family=family) in rest, f"the row for {family} does not name its test"


def test_every_transcript_is_documented_and_complete():
    for family in FAMILIES:
        transcript = load(family)
        assert transcript["family"] == family
        for key in ("name", "model", "references", "notes", "headers", "thinking", "request", "expect", "stream"):
            assert key in transcript, (family, key)
        assert any(r.startswith("https://") for r in transcript["references"]), family
        assert "event-stream" in {k.lower(): v for k, v in transcript["headers"].items()}["content-type"]
        assert transcript["stream"][-1] == {"data": "[DONE]"}, family
