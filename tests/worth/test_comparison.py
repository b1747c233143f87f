"""The blind comparison: a debate's conclusion against a single answer at about the same cost,
shown as A and B in random order with the names hidden until the vote, and the tally of votes."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates import comparisons
from debates.models import Comparison, Debate
from tests.worth.conftest import duel

pytestmark = pytest.mark.django_db(transaction=True)


async def finished(owner) -> Debate:
    return await duel(owner)


async def ready(pk: int, timeout: float = 20) -> Comparison:
    """The comparison once its single answer is written (in the background, on the debate loop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        made = await Comparison.objects.aget(pk=pk)
        if made.state != Comparison.State.RUNNING:
            return made
        await asyncio.sleep(0.05)
    raise AssertionError("the single answer was not written in time")


async def test_a_blind_comparison_hides_the_names_until_the_vote(libraries, fast_llm, alice, settings):
    settings.AGORA_PRICE_PER_MTOK = "1,2"
    debate = await finished(alice)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    sent = len(fast_llm.chat_requests)
    response = await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/")
    made = await ready(int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert made.state == "ready" and sorted(made.order) == ["debate", "single"]
    single = made.arms["single"]
    asked = fast_llm.chat_requests[sent:]
    assert len(asked) == 1 and asked[0].body["max_tokens"] == single["max_tokens"]
    # Equal cost: (the debate's cost − the prompt's) ÷ the output price, within 200–4,000.
    expected = int((debate.cost - single["prompt_tokens"] * 1 / 1e6) * 1e6 / 2)
    assert single["rule"] == "equal cost" and abs(single["max_tokens"] - max(200, min(4000, expected))) <= 2

    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/compare/{made.pk}/")).content.decode()
    assert 'id="answer-A"' in page and 'id="answer-B"' in page
    assert "data-arm" not in page and "the debate" not in page.split('id="answers"')[1]  # no names yet
    assert made.arms["debate"]["text"][:30] in page and single["text"][:20] in page
    await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/{made.pk}/", {"vote": "A", "reason": "更具体"})
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/compare/{made.pk}/")).content.decode()
    assert f'data-arm="{made.order[0]}"' in page and "You chose A." in page
    again = await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/{made.pk}/", {"vote": "B"}, follow=True)
    assert "Choose A, B or a tie (once)." in again.content.decode()
    made = await Comparison.objects.aget(pk=made.pk)
    assert made.vote == "A" and made.winner == made.order[0] and made.reason == "更具体"

    tally = json.loads((await sync_to_async(client.get)("/comparisons/?format=json")).content)
    assert tally["tally"][0]["total"] == 1 and tally["tally"][0][made.winner] == 1
    assert tally["votes"][0]["order"] == made.order
    html = (await sync_to_async(client.get)("/comparisons/")).content.decode()
    won = 1 if made.winner == "debate" else 0
    assert f"The debate won {won} of 1 comparisons at equal cost, Duel on " in html


async def test_the_order_is_drawn_for_each_comparison(libraries, fast_llm, alice):
    debate = await finished(alice)
    made = [await sync_to_async(comparisons.start)(debate, alice) for _ in range(20)]
    orders = {tuple((await ready(m.pk)).order) for m in made}
    assert orders == {("debate", "single"), ("single", "debate")}  # both orders in 20 (a miss: 2 in a million)


async def test_without_prices_the_single_answer_gets_the_debates_tokens(libraries, fast_llm, alice):
    debate = await finished(alice)
    made = await ready((await sync_to_async(comparisons.start)(debate, alice)).pk)
    single = made.arms["single"]
    assert single["rule"] == "equal tokens"
    assert single["max_tokens"] == max(200, min(4000, debate.total_tokens - single["prompt_tokens"]))


async def test_a_third_arm_of_self_consistency_takes_the_same_allowance(libraries, fast_llm, alice):
    debate = await finished(alice)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    sent = len(fast_llm.chat_requests)
    response = await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/", {"vote": "1"})
    made = await ready(int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert sorted(made.order) == ["debate", "single", "vote"] and made.state == "ready"
    asked = fast_llm.chat_requests[sent:]
    assert len(asked) == 1 + 3 + 1  # the single answer, three samples, the merge
    share = made.arms["single"]["max_tokens"] // 4
    assert [r.body["max_tokens"] for r in asked[1:]] == [max(100, share)] * 4
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/compare/{made.pk}/")).content.decode()
    assert 'id="answer-C"' in page and 'value="C"' in page
    await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/{made.pk}/", {"vote": "C"})
    made = await Comparison.objects.aget(pk=made.pk)
    assert made.winner == made.order[2]
