"""Money next to tokens: each call priced (the provider's own prices, the offline table, the
environment's, free for the local model), summed over every attempt, shown wherever tokens are;
a money budget stops a debate as the token cap does."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates import prices
from debates.engine import events as ev
from debates.models import Debate, Provider
from testkit.fake_llm import FakeLLM
from tests.engine.conftest import HUINENG, YINGUANG, debate, duel_spec, panel_spec
from tests.engine.test_panel import panel_fake
from tests.worth.conftest import duel


def priced(price=(1.0, 2.0), **kw) -> FakeLLM:
    fake = FakeLLM(**kw)
    fake.price = price
    return fake


async def test_every_call_is_priced_and_summed():
    run = await debate(duel_spec(seats=[HUINENG, YINGUANG]), priced())
    assert run.outcome == "done"
    finished = run.sink.of(ev.TurnFinished)
    expected = sum((t.prompt_tokens * 1.0 + t.completion_tokens * 2.0) / 1e6 for t in finished)
    assert all(t.cost == pytest.approx((t.prompt_tokens + 2 * t.completion_tokens) / 1e6) for t in finished)
    ledger = run.data["ledger"]
    assert ledger["cost"] == pytest.approx(expected) and ledger["cost_unknown"] is False
    assert "cost $" in run.report.transcript_markdown


async def test_an_unpriced_model_says_its_money_is_unknown():
    run = await debate(duel_spec(seats=[HUINENG, YINGUANG]), FakeLLM())
    assert run.data["ledger"]["cost"] == 0 and run.data["ledger"]["cost_unknown"] is True


async def test_a_money_budget_stops_a_duel_before_the_turn_that_would_pass_it():
    options = duel_spec().options
    options.money_budget = 0.0025  # each speech costs about a thousandth at this price
    spec = duel_spec(seats=[HUINENG, YINGUANG], options=options)
    run = await debate(spec, priced(price=(1.0, 2.0)))
    assert run.outcome == "stopped"
    assert "money_budget" in run.warning_codes
    costs = [t.cost for t in run.sink.of(ev.TurnFinished)]
    assert sum(costs[:-1]) < 0.0025 <= sum(costs)  # the turn that passed it was the last to start
    assert run.ledger.money >= 0.0025 and len(run.sink.of(ev.TurnFinished)) < 9  # it did not run to the end
    assert "money budget" in run.finished.reason


async def test_a_money_budget_ends_a_panels_rounds_and_its_verdict_is_still_written():
    spec = panel_spec(money_budget=0.004)
    run = await debate(spec, _priced_panel())
    assert run.outcome == "done"
    assert "host:verdict" in run.turns()  # the reserved verdict ran past the budget
    assert not run.calls_for("r4:*") and run.data["ledger"]["money_cap"] == 0.004


def _priced_panel() -> FakeLLM:
    fake = panel_fake()
    fake.price = (1.0, 2.0)
    # The baseline's million prompt tokens are the test's way to a token cap with room (see
    # `test_panel.ROOMY_BASELINE`), not money spent: priced at nothing.
    fake.price_for = lambda key: (0.0, 0.0) if key == "host:baseline" else fake.price
    return fake


def test_prices_come_from_the_provider_then_the_table(db):
    deepseek = Provider(name="deepseek", base_url="https://api.deepseek.com/v1", default_model="deepseek-chat")
    # The table prices DeepSeek by the hour: the full price at 10:00 UTC, half off-peak at 18:00.
    peak, off_peak = datetime(2026, 12, 1, 10, tzinfo=UTC), datetime(2026, 12, 1, 18, tzinfo=UTC)
    assert (
        prices.for_provider(deepseek, "", peak).pair == (0.27, 1.1)
        and prices.for_provider(deepseek, "", peak).source == "genai-prices"
    )
    assert prices.for_provider(deepseek, "", off_peak).pair == (0.135, 0.55)
    deepseek.input_price, deepseek.output_price = 0.5, 0.7
    assert prices.for_provider(deepseek, "") == prices.Price(0.5, 0.7, "admin")
    assert prices.from_table("no-such-model-anywhere") is None


def test_the_local_model_is_free_and_the_environment_can_name_a_price(settings):
    settings.OPENAI_BASE_URL = ""
    assert prices.for_default("") == prices.Price(0.0, 0.0, "local")
    settings.OPENAI_BASE_URL, settings.AGORA_PRICE_PER_MTOK = "http://127.0.0.1:9/v1", "0.3,1.2"
    assert prices.for_default("fake-model").pair == (0.3, 1.2)


@pytest.mark.django_db(transaction=True)
async def test_money_appears_wherever_tokens_do(libraries, fast_llm, alice, settings):
    settings.AGORA_PRICE_PER_MTOK = "1,2"
    made = await duel(alice)
    debate_row = await Debate.objects.aget(pk=made.pk)
    turns = [t async for t in debate_row.turns.all()]
    assert debate_row.cost == pytest.approx(sum(t.cost for t in turns)) and debate_row.cost > 0
    assert debate_row.cost == pytest.approx(sum((t.prompt_tokens + 2 * t.completion_tokens) / 1e6 for t in turns))
    shown = "$" + f"{debate_row.cost:.4f}".rstrip("0").rstrip(".")

    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    for path in ("/", f"/debates/{made.pk}/", f"/debates/{made.pk}/report/"):
        page = (await sync_to_async(client.get)(path)).content.decode()
        assert shown in page, path
    data = json.loads((await sync_to_async(client.get)(f"/debates/{made.pk}/export.json")).content)
    assert data["tokens"]["cost_usd"] == pytest.approx(debate_row.cost)
    assert all(t["cost_usd"] is not None for t in data["turns"])
    md = (await sync_to_async(client.get)(f"/debates/{made.pk}/export.md")).content.decode()
    assert re.search(r"费用 \$0\.\d{4}", md), "the export is in the debate's language (the question's)"


@pytest.mark.django_db(transaction=True)
async def test_the_form_takes_a_money_budget_and_it_stops_the_debate(libraries, fast_llm, alice, settings):
    settings.AGORA_PRICE_PER_MTOK = "100,200"  # dear: the first speeches spend the budget
    made = await duel(alice, expect="stopped", rounds="", money_budget="0.05")
    assert made.options["money_budget"] == 0.05
    row = await Debate.objects.aget(pk=made.pk)
    assert row.cost >= 0.05 and any(w["code"] == "money_budget" for w in row.warnings)
