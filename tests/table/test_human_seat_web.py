"""A person in a seat, through the web: the start form seats them, the live page shows them a
composer (and everyone else who is waiting), what they write is checked beside each part, stored
once and streamed on; the deadline hands the turn on."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone

from debates import control, runner
from debates.models import Debate, Seat, Status

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "念佛与参禅，哪条路更适合现代人修行？"


async def client_for(user, language="en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    await sync_to_async(client.force_login)(user)
    return client


async def start_with_me(client, **fields) -> Debate:
    data = {
        "topic": QUESTION,
        "format": "duel",
        "personas": ["huineng", "yinguang"],
        "human-yinguang": "1",
        "rounds": "2",
        "stand_in": "llm",
    }
    data.update(fields)
    response = await sync_to_async(client.post)("/debates/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return await Debate.objects.aget(pk=int(re.search(r"/debates/(\d+)/", response["Location"]).group(1)))


def parts(**values) -> dict:
    return {
        "part-0": values.get("body", "念佛一门，三根普被，在家人最易行。"),
        "part-1": "无",
        "part-2": "持名念佛最契根机。",
    }


async def test_the_person_writes_their_turn_once_and_the_debate_runs_on(libraries, fast_llm, alice, bob, no_runs):
    me = await client_for(alice)
    debate = await start_with_me(me)
    seat = await Seat.objects.aget(debate=debate, persona__slug="yinguang")
    assert seat.human_id == alice.pk and seat.stand_in == "llm"

    assert await runner.execute(debate.pk) == "waiting"
    debate = await Debate.objects.aget(pk=debate.pk)
    assert debate.status == Status.WAITING and debate.awaiting["key"] == "duel:1:yinguang"
    assert debate.awaiting["human"] == alice.pk and debate.awaiting["deadline_at"]
    page = (await sync_to_async(me.get)(f"/debates/{debate.pk}/")).content.decode()
    assert 'id="composer"' in page and "Your turn, as Yinguang" in page
    assert 'data-max="307"' in page  # the body's limit (300, and the 7 of the lead a model is given)
    assert "Waiting for alice to speak as Yinguang" in page

    # Too long: the composer comes back with the text kept and the error beside the part.
    too_long = "长" * 308
    response = await sync_to_async(me.post)(
        f"/debates/{debate.pk}/speak/", parts(body=too_long), HTTP_HX_REQUEST="true"
    )
    page_html = response.content.decode()
    assert response.status_code == 200 and too_long in page_html and "308 characters; at most 307." in page_html
    assert (await Debate.objects.aget(pk=debate.pk)).human_inputs == {}

    # Someone else may not write it.
    other = await client_for(bob)
    assert (await sync_to_async(other.post)(f"/debates/{debate.pk}/speak/", parts())).status_code == 404

    response = await sync_to_async(me.post)(f"/debates/{debate.pk}/speak/", parts(), HTTP_HX_REQUEST="true")
    assert response.headers.get("HX-Refresh") == "true"
    twice = await sync_to_async(me.post)(f"/debates/{debate.pk}/speak/", parts(body="第二次"), follow=True)
    assert "No turn is waiting for you here." in twice.content.decode()  # the second click changes nothing
    debate = await Debate.objects.aget(pk=debate.pk)
    assert list(debate.human_inputs) == ["duel:1:yinguang"] and debate.status == Status.QUEUED
    assert no_runs.count(debate.pk) == 2  # started once at creation, once by the turn (not twice)

    assert await runner.execute(debate.pk) == "waiting"  # on to the person's second turn
    turn = await debate.turns.aget(key="duel:1:yinguang")
    assert turn.text.startswith("正文：念佛一门") and turn.state == "done" and turn.model == "human · alice"
    assert (await Debate.objects.aget(pk=debate.pk)).awaiting["key"] == "duel:2:yinguang"


async def test_the_deadline_hands_the_turn_to_a_model_or_passes_it(libraries, fast_llm, alice, no_runs):
    me = await client_for(alice)
    for stand_in in ("llm", "pass"):
        debate = await start_with_me(me, stand_in=stand_in, rounds="1")
        assert await runner.execute(debate.pk) == "waiting"
        assert await sync_to_async(control.expire_human_turns)() == []  # not yet
        past = (timezone.now() - timedelta(seconds=1)).isoformat()
        row = await Debate.objects.aget(pk=debate.pk)
        await Debate.objects.filter(pk=debate.pk).aupdate(awaiting={**row.awaiting, "deadline_at": past})
        assert await sync_to_async(control.expire_human_turns)() == [debate.pk]
        assert await sync_to_async(control.expire_human_turns)() == []  # once
        assert await runner.execute(debate.pk) == "done"
        turn = await (await Debate.objects.aget(pk=debate.pk)).turns.aget(key="duel:1:yinguang")
        if stand_in == "pass":
            assert "本轮弃权" in turn.text and turn.model == "human · alice"
        else:
            assert turn.text and "本轮弃权" not in turn.text and "human" not in turn.model


async def test_the_start_form_keeps_the_seat_choice_when_it_comes_back(libraries, alice, no_runs):
    me = await client_for(alice)
    response = await sync_to_async(me.post)(
        "/debates/new/", {"topic": "", "format": "duel", "personas": ["huineng", "yinguang"], "human-yinguang": "1"}
    )
    page_html = response.content.decode()
    assert re.search(r'name="human-yinguang" value="1" checked', page_html)
    assert not re.search(r'name="human-huineng" value="1" checked', page_html)


async def test_taking_a_seat_without_its_persona_is_said_beside_the_personas(libraries, alice, no_runs):
    me = await client_for(alice)
    response = await sync_to_async(me.post)(
        "/debates/new/", {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"], "human-ouyi": "1"}
    )
    assert "You chose to take Ouyi Zhixu's seat: tick the persona too." in html.unescape(response.content.decode())
    assert not await Debate.objects.aexists()


async def test_an_invited_user_accepts_then_sees_the_debate_and_writes_their_seats_turn(
    libraries, fast_llm, alice, bob, no_runs
):
    owner = await client_for(alice)
    debate = await start_with_me(owner, **{"human-yinguang": "", "invite-yinguang": "bob", "rounds": "1"})
    seat = await Seat.objects.aget(debate=debate, persona__slug="yinguang")
    assert seat.human_id == bob.pk and seat.invitation == "pending"
    assert await runner.execute(debate.pk) == "waiting"
    guest = await client_for(bob)
    assert (await sync_to_async(guest.get)(f"/debates/{debate.pk}/")).status_code == 404  # not before accepting
    accepted = await sync_to_async(guest.post)(f"/seats/{seat.pk}/invitation/", {"answer": "accept"})
    assert accepted.status_code == 302 and accepted["Location"] == f"/debates/{debate.pk}/"
    page = (await sync_to_async(guest.get)(f"/debates/{debate.pk}/")).content.decode()
    assert f'data-user="{bob.pk}"' in page and f'data-seat="{bob.pk}"' in page  # the composer is his
    assert "Waiting for bob to speak as Yinguang" in page
    home = (await sync_to_async(guest.get)("/")).content.decode()
    assert f"/debates/{debate.pk}/" in home  # listed among his debates
    assert (await sync_to_async(owner.post)(f"/debates/{debate.pk}/speak/", parts())).status_code == 404
    assert (await sync_to_async(guest.post)(f"/debates/{debate.pk}/stop/")).status_code == 404  # his seat only
    await sync_to_async(guest.post)(f"/debates/{debate.pk}/speak/", parts())
    assert await runner.execute(debate.pk) == "done"
    turn = await (await Debate.objects.aget(pk=debate.pk)).turns.aget(key="duel:1:yinguang")
    assert turn.model == "human · bob" and turn.text.startswith("正文：念佛一门")
