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
from debates.models import Debate, Seat, Status

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


# -- #15: invitations are accepted or declined; unknown names are not revealed ---------------------


async def invite(client, name: str, *, stand_in="llm", rounds="1", topic=QUESTION) -> Debate:
    return await start(
        client, topic=topic, stand_in=stand_in, rounds=rounds, **{"human-yinguang": "", "invite-yinguang": name}
    )


async def seat_of(debate) -> Seat:
    return await Seat.objects.select_related("persona").aget(debate=debate, persona__slug="yinguang")


async def home_of(client) -> str:
    return (await sync_to_async(client.get)("/")).content.decode()


def section(page: str, element_id: str) -> str:
    found = re.search(rf'<section class="\w+" id="{element_id}".*?</section>', page, re.DOTALL)
    return found.group(0) if found else ""


async def test_an_unknown_name_is_taken_like_a_real_one_and_the_owners_page_cannot_tell(
    libraries, fast_llm, alice, bob, no_runs
):
    owner = await client_for(alice)
    real, made_up = await invite(owner, "bob"), await invite(owner, "nobody")  # no error either way
    assert await Debate.objects.acount() == 2
    real_seat, made_up_seat = await seat_of(real), await seat_of(made_up)
    assert (real_seat.human_id, real_seat.invitation) == (bob.pk, "pending")
    assert (made_up_seat.human_id, made_up_seat.invitation, made_up_seat.invited_name) == (None, "pending", "nobody")

    pages = {}
    for debate, name in ((real, "bob"), (made_up, "nobody")):
        assert await runner.execute(debate.pk) == "waiting"  # both wait for the person, deadline and all
        row = await Debate.objects.aget(pk=debate.pk)
        assert row.awaiting["human"] is None and row.awaiting["human_name"] == name  # named, not identified
        page = (await sync_to_async(owner.get)(f"/debates/{debate.pk}/")).content.decode()
        seat = await seat_of(debate)
        people = section(page, "people").replace(name, "NAME").replace(str(seat.pk), "N")
        people = re.sub(r'name="csrfmiddlewaretoken" value="\w+"', "", people)
        pages[name] = (people, 'data-seat="None"' in page, f"Waiting for {name} to speak" in page)
    assert pages["bob"] == pages["nobody"]
    assert "invited, no answer yet" in pages["bob"][0] and pages["bob"][1:] == (True, True)


async def test_a_pending_invitation_is_shown_as_one_and_the_debate_is_not_the_invitees_until_accepted(
    libraries, fast_llm, alice, bob, no_runs
):
    owner, guest = await client_for(alice), await client_for(bob)
    debate = await invite(owner, "bob")
    seat = await seat_of(debate)
    assert await runner.execute(debate.pk) == "waiting"

    home = await home_of(guest)
    invitation = section(home, "invitations")
    # The persona named in the reader's language (English here).
    assert "alice invites you to speak as Yinguang on:" in html.unescape(invitation) and QUESTION in invitation
    assert f'action="/seats/{seat.pk}/invitation/"' in invitation
    assert f'href="/debates/{debate.pk}/"' not in home  # not in his list
    assert (await sync_to_async(guest.get)(f"/debates/{debate.pk}/")).status_code == 404
    assert (await sync_to_async(guest.get)(f"/debates/{debate.pk}/export.json")).status_code == 404
    assert (await sync_to_async(guest.post)(f"/debates/{debate.pk}/speak/", duel_parts())).status_code == 404
    assert (await sync_to_async(owner.post)(f"/seats/{seat.pk}/invitation/", {"answer": "accept"})).status_code == 404

    await sync_to_async(guest.post)(f"/seats/{seat.pk}/invitation/", {"answer": "accept"})
    assert (await seat_of(debate)).invitation == "accepted"
    assert (await Debate.objects.aget(pk=debate.pk)).awaiting["human"] == bob.pk  # the waiting turn is his now
    home = await home_of(guest)
    assert f'href="/debates/{debate.pk}/"' in home and not section(home, "invitations")
    page = (await sync_to_async(guest.get)(f"/debates/{debate.pk}/")).content.decode()
    assert f'data-seat="{bob.pk}"' in page and "Leave this seat" in page
    await sync_to_async(guest.post)(f"/debates/{debate.pk}/speak/", duel_parts())
    assert await runner.execute(debate.pk) == "done"
    turn = await (await Debate.objects.aget(pk=debate.pk)).turns.aget(key="duel:1:yinguang")
    assert turn.model == "human · bob"


@pytest.mark.parametrize("stand_in", ["llm", "pass"])
async def test_declining_hands_the_waiting_turn_on_as_a_missed_one(libraries, fast_llm, alice, bob, no_runs, stand_in):
    owner, guest = await client_for(alice), await client_for(bob)
    debate = await invite(owner, "bob", stand_in=stand_in)
    seat = await seat_of(debate)
    assert await runner.execute(debate.pk) == "waiting"
    response = await sync_to_async(guest.post)(f"/seats/{seat.pk}/invitation/", {"answer": "decline"}, follow=True)
    assert "Invitation declined." in response.content.decode()
    assert (await seat_of(debate)).invitation == "declined"
    row = await Debate.objects.aget(pk=debate.pk)
    assert row.awaiting == {} and row.human_inputs["duel:1:yinguang"]["stand_in"] == stand_in  # not at the deadline
    assert row.status == Status.QUEUED
    assert await runner.execute(debate.pk) == "done"
    turn = await row.turns.aget(key="duel:1:yinguang")
    assert ("本轮弃权" in turn.text) == (stand_in == "pass")
    assert not section(await home_of(guest), "invitations")
    assert (await sync_to_async(guest.get)(f"/debates/{debate.pk}/")).status_code == 404
    # Answered once: a second answer changes nothing.
    await sync_to_async(guest.post)(f"/seats/{seat.pk}/invitation/", {"answer": "accept"})
    assert (await seat_of(debate)).invitation == "declined"
    owners_page = (await sync_to_async(owner.get)(f"/debates/{debate.pk}/")).content.decode()
    assert "bob as Yinguang — declined" in html.unescape(owners_page)


async def test_leaving_takes_the_debate_out_of_the_list_and_later_turns_do_not_wait(
    libraries, fast_llm, alice, bob, no_runs
):
    owner, guest = await client_for(alice), await client_for(bob)
    debate = await invite(owner, "bob", rounds="2")
    seat = await seat_of(debate)
    await sync_to_async(guest.post)(f"/seats/{seat.pk}/invitation/", {"answer": "accept"})
    assert await runner.execute(debate.pk) == "waiting"
    await sync_to_async(guest.post)(f"/debates/{debate.pk}/speak/", duel_parts())
    assert await runner.execute(debate.pk) == "waiting"  # his second turn

    await sync_to_async(guest.post)(f"/seats/{seat.pk}/leave/")
    assert (await seat_of(debate)).invitation == "left"
    assert f'href="/debates/{debate.pk}/"' not in await home_of(guest)
    assert (await sync_to_async(guest.get)(f"/debates/{debate.pk}/")).status_code == 404
    assert await runner.execute(debate.pk) == "done"  # the waiting turn was handed on; none waited after
    turns = {t.key: t async for t in (await Debate.objects.aget(pk=debate.pk)).turns.all()}
    assert turns["duel:1:yinguang"].model == "human · bob"
    assert "human" not in turns["duel:2:yinguang"].model and "stands in for bob" in turns["duel:2:yinguang"].model


async def test_the_owner_withdraws_an_invitation_and_nobody_else_can(libraries, fast_llm, alice, bob, no_runs):
    owner, guest = await client_for(alice), await client_for(bob)
    debate = await invite(owner, "bob")
    seat = await seat_of(debate)
    assert (await sync_to_async(guest.post)(f"/seats/{seat.pk}/withdraw/")).status_code == 404
    assert (await seat_of(debate)).invitation == "pending"
    await sync_to_async(owner.post)(f"/seats/{seat.pk}/withdraw/")
    assert (await seat_of(debate)).invitation == "withdrawn"
    assert not section(await home_of(guest), "invitations")


async def test_a_fork_asks_the_invitee_again(libraries, fast_llm, alice, bob, no_runs):
    from debates import branches

    owner, guest = await client_for(alice), await client_for(bob)
    debate = await invite(owner, "bob")
    seat = await seat_of(debate)
    await sync_to_async(guest.post)(f"/seats/{seat.pk}/invitation/", {"answer": "accept"})
    assert await runner.execute(debate.pk) == "waiting"
    await sync_to_async(guest.post)(f"/debates/{debate.pk}/speak/", duel_parts())
    assert await runner.execute(debate.pk) == "done"
    first = await (await Debate.objects.aget(pk=debate.pk)).turns.order_by("position").afirst()
    fork = await sync_to_async(branches.fork)(await Debate.objects.aget(pk=debate.pk), first, alice)
    copy = await seat_of(fork)
    assert (copy.human_id, copy.invitation) == (bob.pk, "pending")
    assert f'href="/debates/{fork.pk}/"' not in await home_of(guest)


async def test_a_hostile_question_in_an_invitation_stays_inert(libraries, fast_llm, alice, bob, no_runs):
    from tests.security.conftest import check_html

    owner, guest = await client_for(alice), await client_for(bob)
    hostile = "<img src=x onerror=alert(1)>\u202e<script>alert(2)</script> 该不该修行？"
    await invite(owner, "bob", topic=hostile)
    invitation = section(await home_of(guest), "invitations")
    problems, text = check_html(invitation)
    assert problems == [] and "<img src=x onerror=alert(1)>" in text
