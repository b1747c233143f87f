"""The blind comparison: a debate's conclusion against a single answer at about the same cost,
shown as A and B in random order with the names hidden until the vote, and the tally of votes."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates import baselines, comparisons
from debates.models import Comparison, Debate
from tests.worth.conftest import QUESTION, duel

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
    assert len(asked) == 1 + 2  # the single answer, then each arm's neutral rendering
    assert asked[0].body["max_tokens"] == single["max_tokens"]
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
    orders = set()
    for _ in range(20):  # one at a time: a comparison of a debate waits for the one before
        orders.add(tuple((await ready((await sync_to_async(comparisons.start)(debate, alice)).pk)).order))
    assert orders == {("debate", "single"), ("single", "debate")}  # both orders in 20 (a miss: 2 in a million)


async def test_without_prices_the_single_answer_gets_the_debates_tokens(libraries, fast_llm, alice):
    debate = await finished(alice)
    made = await ready((await sync_to_async(comparisons.start)(debate, alice)).pk)
    single = made.arms["single"]
    assert single["rule"] == "equal tokens"
    assert single["max_tokens"] == max(200, min(4000, debate.total_tokens - single["prompt_tokens"]))


async def test_a_comparison_that_breaks_says_why_and_does_not_stay_running(libraries, fast_llm, alice, monkeypatch):
    """Not only a provider's error: whatever breaks while the answers are written (here a fault
    of ours) ends the comparison as failed with its reason, instead of "being written" until the
    deadline (80 minutes at the default turn deadline: 8 calls of 600 s)."""
    debate = await finished(alice)

    async def broken(*args, **kwargs):
        raise RuntimeError("the arm could not be read")

    monkeypatch.setattr(baselines, "single_arm", broken)
    made = await ready((await sync_to_async(comparisons.start)(debate, alice)).pk)
    assert made.state == "failed" and "RuntimeError: the arm could not be read" in made.error


async def test_a_third_arm_of_self_consistency_takes_the_same_allowance(libraries, fast_llm, alice):
    debate = await finished(alice)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    sent = len(fast_llm.chat_requests)
    response = await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/", {"vote": "1"})
    made = await ready(int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert sorted(made.order) == ["debate", "single", "vote"] and made.state == "ready"
    asked = fast_llm.chat_requests[sent:]
    assert len(asked) == 1 + 3 + 1 + 3  # the single answer, three samples, the merge, three renderings
    share = made.arms["single"]["max_tokens"] // 4
    assert [r.body["max_tokens"] for r in asked[1:5]] == [max(100, share)] * 4
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/compare/{made.pk}/")).content.decode()
    assert 'id="answer-C"' in page and 'value="C"' in page
    await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/{made.pk}/", {"vote": "C"})
    made = await Comparison.objects.aget(pk=made.pk)
    assert made.winner == made.order[2]


# -- blind: nothing before the vote gives the debate's side away ---------------------------------------


def _rendering(request: dict) -> str | None:
    """The fake model's rewrite: marked, so the page can be searched for it."""
    system = request["messages"][0]["content"]
    if not system.startswith("You are given a question and one answer to it."):
        return None
    return f"NEUTRAL-{len(request['messages'][1]['content'])} 结论在先，理由随后。"


@pytest.mark.parametrize(
    "question, language",
    [(QUESTION, "简体中文 (Simplified Chinese)"), ("Should a modern practitioner chant or meditate?", "English")],
)
async def test_the_debates_side_is_not_the_report_the_reader_just_read(libraries, fast_llm, alice, question, language):
    """Before the vote the page shows each arm rewritten by the same model with the same prompt in
    the question's language: not a sentence of the report's verdict, and no way back to it."""
    debate = await duel(alice, topic=question)
    verdict = await sync_to_async(baselines.conclusion_of)(debate)
    report_page = await sync_to_async(lambda path: _client_for(alice).get(path))(f"/debates/{debate.pk}/report/")
    # What the reader has just read: every reply of the fake model starts with its own tag.
    tags = set(re.findall(r"\[[0-9a-f]{6}\]", verdict))
    assert tags and all(tag in report_page.content.decode() for tag in tags)

    fast_llm.script = _rendering
    sent = len(fast_llm.chat_requests)
    made = await ready((await sync_to_async(comparisons.start)(debate, alice)).pk)
    assert made.state == "ready", made.error
    renderings = [r for r in fast_llm.chat_requests[sent:] if _rendering(r.body)]
    # Both arms, through the same prompt, asked for in the question's language.
    assert len(renderings) == 2
    assert {r.body["messages"][0]["content"] for r in renderings} == {
        comparisons.RENDER_SYSTEM.format(language=language)
    }
    given = sorted(r.body["messages"][1]["content"].split("## The answer\n", 1)[1] for r in renderings)
    assert given == sorted([verdict, made.arms["single"]["original"]])

    client = await sync_to_async(_client_for)(alice)
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/compare/{made.pk}/")).content.decode()
    answers = page.split('id="answers"', 1)[1]
    assert answers.count("NEUTRAL-") == 2
    assert not any(tag in page for tag in tags), "the report's own words are on the page before the vote"
    assert made.arms["single"]["original"][:8] not in page, "the single answer as written, unrendered"
    assert f"/debates/{debate.pk}/report/" not in page, "a link back to the verdict before the vote"

    await sync_to_async(client.post)(f"/debates/{debate.pk}/compare/{made.pk}/", {"vote": "tie"})
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/compare/{made.pk}/")).content.decode()
    assert f"/debates/{debate.pk}/report/" in page and 'data-arm="debate"' in page


def _client_for(user) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    return client
