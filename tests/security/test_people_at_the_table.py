"""Hostile input around the people at the table (issue 24): a person's turn after its deadline
(#10), a free-text turn of any size (#11), and invitations (#15)."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone, translation

from debates import human_turns, runner
from debates.models import Debate, Status

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "念佛与参禅，哪条路更适合现代人修行？"
MODERATED_QUESTION = "该不该追问每个定义？"


async def client_for(user, language="en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    await sync_to_async(client.force_login)(user)
    return client


async def start(client, **fields) -> Debate:
    data = {
        "topic": QUESTION,
        "format": "duel",
        "personas": ["huineng", "yinguang"],
        "human-yinguang": "1",
        "rounds": "1",
        "stand_in": "llm",
    }
    data.update(fields)
    response = await sync_to_async(client.post)("/debates/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return await Debate.objects.aget(pk=int(re.search(r"/debates/(\d+)/", response["Location"]).group(1)))


def duel_parts(body="念佛一门，三根普被，在家人最易行。") -> dict:
    return {"part-0": body, "part-1": "无", "part-2": "持名念佛最契根机。"}


async def messages_on(client, debate) -> str:
    return html.unescape((await sync_to_async(client.get)(f"/debates/{debate.pk}/")).content.decode())


# -- #10: the deadline is checked when the turn is claimed ------------------------------------------


@pytest.mark.parametrize("stand_in", ["llm", "pass"])
async def test_a_turn_posted_after_its_deadline_is_refused_and_the_seat_falls_back(
    libraries, fast_llm, alice, no_runs, stand_in
):
    me = await client_for(alice)
    debate = await start(me, stand_in=stand_in)
    assert await runner.execute(debate.pk) == "waiting"
    row = await Debate.objects.aget(pk=debate.pk)
    # 61 ms late, as measured: the watch (once a second) has not handed the turn on yet.
    late = (timezone.now() - timedelta(milliseconds=61)).isoformat()
    await Debate.objects.filter(pk=debate.pk).aupdate(awaiting={**row.awaiting, "deadline_at": late})

    response = await sync_to_async(me.post)(f"/debates/{debate.pk}/speak/", duel_parts(), follow=True)
    said = html.unescape(response.content.decode())
    assert "Your turn came after its deadline and was not used" in said
    assert ("the turn passed" if stand_in == "pass" else "a model speaks for you") in said
    row = await Debate.objects.aget(pk=debate.pk)
    given = row.human_inputs["duel:1:yinguang"]
    assert given["stand_in"] == stand_in and "text" not in given  # what was written is not stored
    assert row.awaiting == {} and row.status == Status.QUEUED and no_runs.count(debate.pk) == 2

    assert await runner.execute(debate.pk) == "done"
    turn = await row.turns.aget(key="duel:1:yinguang")
    assert "念佛一门" not in turn.text
    if stand_in == "pass":
        assert "本轮弃权" in turn.text
    else:
        assert turn.text and "human" not in turn.model


async def test_a_turn_posted_in_time_is_still_taken(libraries, fast_llm, alice, no_runs):
    me = await client_for(alice)
    debate = await start(me)
    assert await runner.execute(debate.pk) == "waiting"
    row = await Debate.objects.aget(pk=debate.pk)
    soon = (timezone.now() + timedelta(seconds=5)).isoformat()
    await Debate.objects.filter(pk=debate.pk).aupdate(awaiting={**row.awaiting, "deadline_at": soon})
    await sync_to_async(me.post)(f"/debates/{debate.pk}/speak/", duel_parts())
    given = (await Debate.objects.aget(pk=debate.pk)).human_inputs["duel:1:yinguang"]
    assert given["text"].startswith("正文：念佛一门") and "stand_in" not in given


# -- #11: a free-text turn is capped when composed ------------------------------------------------


async def start_moderated(client, max_chars="300") -> Debate:
    return await start(
        client,
        topic=MODERATED_QUESTION,
        format="moderated",
        personas=["socrates", "confucius"],
        **{"human-yinguang": "", "human-socrates": "1", "max_chars": max_chars, "rounds": "1"},
    )


async def test_a_free_text_turn_keeps_to_the_formats_speech_limit(libraries, fast_llm, alice, no_runs):
    me = await client_for(alice)
    debate = await start_moderated(me, max_chars="300")
    assert await runner.execute(debate.pk) == "waiting"
    row = await Debate.objects.aget(pk=debate.pk)
    assert row.awaiting["parts"] == [] and row.awaiting["chars"] == 300
    page = (await sync_to_async(me.get)(f"/debates/{debate.pk}/")).content.decode()
    assert 'name="part-0"' in page and 'data-max="300"' in page  # the counter beside the field

    for size in (301, 200_000):
        response = await sync_to_async(me.post)(
            f"/debates/{debate.pk}/speak/", {"part-0": "辩" * size}, HTTP_HX_REQUEST="true"
        )
        said = response.content.decode()
        assert response.status_code == 200 and f"{size} characters; at most 300." in said
        assert 'id="composer-error-0"' in said  # beside the field, with what was written kept
    row = await Debate.objects.aget(pk=debate.pk)
    assert row.human_inputs == {} and row.status == Status.WAITING

    await sync_to_async(me.post)(f"/debates/{debate.pk}/speak/", {"part-0": "辩" * 298 + "\r\n" + "。"})
    given = (await Debate.objects.aget(pk=debate.pk)).human_inputs
    assert [len(g["text"]) for g in given.values()] == [300]  # a newline is one character, as on the page


def test_a_free_text_turn_without_a_limit_of_its_own_has_the_composers():
    limit = human_turns.FREE_TEXT_LIMIT
    with translation.override("en"):
        _text, errors = human_turns.compose({"parts": []}, {"part-0": "x" * (limit + 1)})
    assert errors == {0: f"{limit + 1:d} characters; at most {limit:d}."}
    assert human_turns.compose({"parts": []}, {"part-0": "x" * limit}) == ("x" * limit, {})
    assert human_turns.fields({"parts": []})[0]["chars"] == limit
