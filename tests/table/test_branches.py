"""A finished debate taken further: regenerate a turn (another model, an added instruction; the
turns after it kept or written again), fork at a turn, swap the sides. Each keeps the engine's
guarantees: every turn once, the ledger counting each attempt once, every attempt in the exports;
related debates link to each other."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates import runner
from debates.forms import create_debate
from debates.models import Debate, Seat, Turn

pytestmark = pytest.mark.django_db(transaction=True)
QUESTION = "念佛与参禅，哪条路更适合现代人修行？"


async def finished_duel(owner, rounds="2") -> Debate:
    debate, errors = await sync_to_async(create_debate)(
        {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"], "rounds": rounds}, owner=owner
    )
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    return await Debate.objects.aget(pk=debate.pk)


async def signed_in(user) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(user)
    return client


def asked(request) -> str:
    """Everything a request to the fake model sent in its messages."""
    return "\n".join(m["content"] for m in request.body["messages"])


def turns(debate: Debate) -> dict[str, Turn]:
    return {t.key: t for t in Turn.objects.filter(debate=debate).order_by("position")}


def assert_ledger_exact(debate: Debate) -> None:
    """The debate's totals are every attempt of every turn, each once, and the report agrees."""
    rows = list(Turn.objects.filter(debate=debate))
    prompt = sum(t.prompt_tokens + sum(h.get("prompt_tokens", 0) for h in t.history) for t in rows)
    completion = sum(t.completion_tokens + sum(h.get("completion_tokens", 0) for h in t.history) for t in rows)
    assert (debate.prompt_tokens, debate.completion_tokens) == (prompt, completion)
    ledger = debate.report.data["ledger"]
    assert (ledger["prompt_tokens"], ledger["completion_tokens"]) == (prompt, completion)


async def test_regenerate_one_turn_with_another_model_keeping_the_turns_after_it(
    libraries, fast_llm, alice, no_runs, settings
):
    settings.AGORA_DEFAULT_MODELS = ["other-model"]  # the operator offers it (debates/model_choice.py)
    debate = await finished_duel(alice)
    before = await sync_to_async(turns)(debate)
    target = before["duel:1:huineng"]
    client = await signed_in(alice)
    sent = len(fast_llm.chat_requests)
    response = await sync_to_async(client.post)(
        f"/debates/{debate.pk}/regenerate/",
        {"turn": target.pk, "model": "other-model", "instruction": "更简短，只谈一个要点。", "after": "keep"},
    )
    assert response.status_code == 302 and no_runs == [debate.pk]
    assert await runner.execute(debate.pk) == "done"

    requests = fast_llm.chat_requests[sent:]
    assert len(requests) == 1  # only that turn was asked again; everything else replayed
    assert requests[0].body["model"] == "other-model" and "更简短，只谈一个要点。" in asked(requests[0])
    after = await sync_to_async(turns)(await Debate.objects.aget(pk=debate.pk))
    regenerated = after["duel:1:huineng"]
    assert regenerated.text != target.text and regenerated.history[0]["text"] == target.text
    assert regenerated.history[0]["error"] == "regenerated"
    for key, turn in after.items():
        if key != "duel:1:huineng":
            assert turn.text == before[key].text and not turn.history
            assert turn.data["follows_earlier"] == {"key": "duel:1:huineng", "attempt": 1}
    debate = await Debate.objects.select_related("report").aget(pk=debate.pk)
    await sync_to_async(assert_ledger_exact)(debate)

    # Every attempt is in the exports; the page shows them side by side.
    md = (await sync_to_async(client.get)(f"/debates/{debate.pk}/export.md")).content.decode()
    # (in the debate's language: a Chinese question's export is Chinese)
    assert "*较早的第 1 稿*" in md and target.text.splitlines()[0][:20] in md
    data = json.loads((await sync_to_async(client.get)(f"/debates/{debate.pk}/export.json")).content)
    exported = next(t for t in data["turns"] if t["key"] == "duel:1:huineng")
    assert exported["history"][0]["text"] == target.text
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/")).content.decode()
    assert "1 earlier attempt" in page and 'class="attempts-grid"' in page
    # The turn it follows is named as people name it (speaker · round), never by its key.
    follows = re.search(r"Written after attempt 1 of ([^<]+?), since regenerated\.", page)
    assert follows and follows.group(1).endswith(" · Round 1") and "duel:" not in follows.group(1)


async def test_regenerate_and_write_the_turns_after_it_again(libraries, fast_llm, alice, no_runs):
    debate = await finished_duel(alice)
    before = await sync_to_async(turns)(debate)
    client = await signed_in(alice)
    target = before["duel:2:huineng"]
    await sync_to_async(client.post)(
        f"/debates/{debate.pk}/regenerate/", {"turn": target.pk, "instruction": "换个角度。", "after": "rerun"}
    )
    assert await runner.execute(debate.pk) == "done"
    after = await sync_to_async(turns)(debate)
    rewritten = [k for k, t in after.items() if t.history]
    assert rewritten == ["duel:2:huineng", "duel:2:yinguang", "duel:close"]
    assert all(t.text == before[k].text for k, t in after.items() if k not in rewritten)
    await sync_to_async(assert_ledger_exact)(await Debate.objects.select_related("report").aget(pk=debate.pk))


async def test_only_the_owner_regenerates_and_never_while_it_runs(libraries, fast_llm, alice, bob, no_runs):
    debate = await finished_duel(alice)
    target = (await sync_to_async(turns)(debate))["duel:1:huineng"]
    other = await signed_in(bob)
    assert (
        await sync_to_async(other.post)(f"/debates/{debate.pk}/regenerate/", {"turn": target.pk})
    ).status_code == 404
    await Debate.objects.filter(pk=debate.pk).aupdate(status="running")
    owner = await signed_in(alice)
    response = await sync_to_async(owner.post)(f"/debates/{debate.pk}/regenerate/", {"turn": target.pk}, follow=True)
    assert "Stop the debate first" in response.content.decode() and not no_runs


async def test_fork_at_a_turn_continues_on_its_own_and_both_link(libraries, fast_llm, alice, no_runs):
    debate = await finished_duel(alice)
    kept = (await sync_to_async(turns)(debate))["duel:1:yinguang"]
    client = await signed_in(alice)
    sent = len(fast_llm.chat_requests)
    response = await sync_to_async(client.post)(
        f"/debates/{debate.pk}/fork/", {"turn": kept.pk, "facts": "新事实：本地道场每周有共修。"}
    )
    fork = await Debate.objects.aget(pk=int(re.search(r"/debates/(\d+)/", response["Location"]).group(1)))
    assert fork.forked_from_id == debate.pk and fork.forked_at == "duel:1:yinguang" and fork.owner_id == alice.pk
    copied = await sync_to_async(turns)(fork)
    assert list(copied) == ["duel:1:huineng", "duel:1:yinguang"]
    assert await runner.execute(fork.pk) == "done"
    new_requests = fast_llm.chat_requests[sent:]
    assert new_requests and all(
        "新事实：本地道场每周有共修。" in asked(r) for r in new_requests
    )  # its own continuation
    assert len(new_requests) == len(await sync_to_async(turns)(fork)) - 2  # the copied turns replayed
    original = await sync_to_async(turns)(debate)
    assert [t.text for t in original.values()][:2] == [t.text for t in copied.values()]

    fork_page = (await sync_to_async(client.get)(f"/debates/{fork.pk}/report/")).content.decode()
    forked_at = re.search(rf"Forked from debate #{debate.pk} at turn ([^<]+?)\.", fork_page)
    assert forked_at and forked_at.group(1).endswith(" · Round 1") and "duel:" not in forked_at.group(1)
    original_page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/report/")).content.decode()
    assert f"Fork #{fork.pk}, from turn {forked_at.group(1)}." in original_page


async def test_swap_sides_runs_it_again_the_other_way_and_compares(libraries, fast_llm, alice, no_runs):
    debate = await finished_duel(alice, rounds="1")
    client = await signed_in(alice)
    response = await sync_to_async(client.post)(f"/debates/{debate.pk}/swap/")
    swapped = await Debate.objects.aget(pk=int(re.search(r"/debates/(\d+)/", response["Location"]).group(1)))
    assert swapped.swap_of_id == debate.pk and swapped.question == debate.question and swapped.model == debate.model
    order = [
        s async for s in Seat.objects.filter(debate=swapped).order_by("order").values_list("persona__slug", flat=True)
    ]
    assert order == ["yinguang", "huineng"]  # the other opens
    assert await runner.execute(swapped.pk) == "done"
    assert next(iter(await sync_to_async(turns)(swapped))) == "duel:1:yinguang"
    for pk, other in ((debate.pk, swapped.pk), (swapped.pk, debate.pk)):
        page = (await sync_to_async(client.get)(f"/debates/{pk}/report/")).content.decode()
        assert f"The same debate with the sides swapped: #{other}." in page
        comparison = page.split('id="swap-comparison"')[1].split("</section>")[0]
        assert "Huineng" in comparison and "Yinguang" in comparison, comparison  # the reader's names


@pytest.mark.django_db
def test_a_position_based_debate_swaps_for_and_against(libraries, alice, no_runs):
    from debates import branches

    debate, errors = create_debate(
        {
            "topic": "小公司应该先做产品还是先做销售？",
            "format": "moderated",
            "mode": "position-based",
            "personas": ["steve-jobs", "charlie-munger"],
            "positions": {"steve-jobs": "for", "charlie-munger": "against"},
        },
        owner=alice,
    )
    assert not errors, errors
    swapped = branches.swap(debate, alice)
    sides = dict(Seat.objects.filter(debate=swapped).values_list("persona__slug", "position"))
    assert sides == {"steve-jobs": "against", "charlie-munger": "for"}


async def test_a_regenerated_turn_streams_to_a_watching_page_exactly_once(libraries, fast_llm, alice, no_runs):
    from channels.testing import WebsocketCommunicator

    from agora.asgi import application
    from tests.web.pagemodel import PageModel

    fast_llm.token_delay = 0.005
    debate = await finished_duel(alice, rounds="1")
    target = (await sync_to_async(turns)(debate))["duel:1:yinguang"]
    client = await signed_in(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    viewer = WebsocketCommunicator(
        application,
        f"/ws/debates/{debate.pk}/?after={debate.seq}",
        headers=[(b"origin", b"http://127.0.0.1"), (b"cookie", cookie)],
    )
    assert (await viewer.connect())[0]
    await sync_to_async(client.post)(
        f"/debates/{debate.pk}/regenerate/", {"turn": target.pk, "instruction": "再想想。"}
    )
    page, frames = PageModel(), []
    run = asyncio.ensure_future(runner.execute(debate.pk))
    while not frames or 'data-status="done"' not in frames[-1]:
        frames.append(await viewer.receive_from(timeout=30))
        page.apply(frames[-1])
    assert await run == "done"
    await viewer.disconnect()
    final = await Turn.objects.aget(pk=target.pk)
    shown = [text for pk, text in page.history if pk == target.pk]
    assert shown and all(final.text.startswith(text) for text in shown)  # no gap, no repeat
    assert final.pk in page.finished  # and the page ends on the finished turn
