"""The replay of a finished debate (debates/replay.py): the schedule its page plays (every
character of every turn once, in order, at the recorded pace, silences shortened), and who may open
it. The page in Chromium: tests/web/test_replay_browser.py."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates import runner
from debates.forms import create_debate
from debates.models import Debate, Status, Turn
from debates.replay import MAX_GAP_MS, schedule, shown_text

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def turn(pk, text, start_s, pace, *, end_s=None, round_=1, phase="opening"):
    return Turn(
        pk=pk,
        key=f"t{pk}",
        text=text,
        round=round_,
        phase=phase,
        pace=pace,
        started_at=T0 + timedelta(seconds=start_s),
        finished_at=T0 + timedelta(seconds=end_s) if end_s is not None else None,
    )


def chars_at(planned_turn, t):
    n = 0
    for a, b, c0, c1 in planned_turn["segments"]:
        if t >= b:
            n = c1
            continue
        n = c0 + int((c1 - c0) * (t - a) / (b - a)) if t > a else c0
        break
    return n


def test_a_turn_plays_at_its_recorded_pace_and_silences_are_shortened():
    steady = [[1000 + 40 * i, 2 * (i + 1)] for i in range(50)]  # 1 s to the first word, then 2 s of text
    planned = schedule(
        [
            turn(1, "x" * 100, 0, steady, end_s=3.5),
            turn(2, "y" * 10, 60, [[500, 4], [540, 10]], end_s=61),  # a minute later
        ]
    )
    first, second = planned["turns"]
    # The wait for the first word (1 s) is kept; the text's 1.96 s run exactly as recorded.
    assert first["at"] == 0 and first["segments"][0][:2] == [1000, 1000]
    assert first["segments"][-1][1] - first["segments"][0][1] == steady[-1][0] - steady[0][0]
    # Every character once, in order: the segments tile 0…len with no gap and no overlap.
    for planned_turn in planned["turns"]:
        ends = [(c0, c1) for *_, c0, c1 in planned_turn["segments"]]
        assert ends[0][0] == 0 and ends[-1][1] == len(planned_turn["text"])
        assert all(a[1] == b[0] for a, b in zip(ends, ends[1:], strict=False))
    # A minute of silence becomes MAX_GAP_MS.
    assert second["at"] - first["segments"][-1][1] <= MAX_GAP_MS
    assert second["segments"][-1][1] - second["at"] <= MAX_GAP_MS + 40
    assert planned["duration"] == max(t["end"] for t in planned["turns"]) < 6000
    # Positions grow with time and never step back.
    shown = [chars_at(first, t) for t in range(0, 4000, 10)]
    assert shown == sorted(shown) and shown[-1] == 100


def test_the_final_text_is_what_plays_when_it_was_tidied_after_the_stream():
    planned = schedule([turn(1, "Speech: abcdef", 0, [[100, 4], [140, 12], [180, 16]], end_s=1)])
    only = planned["turns"][0]
    assert only["text"] == "abcdef" == shown_text(Turn(text="Speech: abcdef"))  # as the live page shows it
    assert only["segments"][-1][3] == 6


def test_old_turns_play_evenly_and_a_persons_turn_appears_at_once():
    planned = schedule([turn(1, "a" * 30, 0, None, end_s=3), turn(2, "b" * 5, 4, [], end_s=40)])
    old, person = planned["turns"]
    assert planned["even"]
    assert old["segments"] == [[0, 3000, 0, 30]]
    (segment,) = person["segments"]
    assert segment[0] == segment[1] and segment[2:] == [0, 5]  # whole, when it ended
    assert segment[0] - old["end"] <= MAX_GAP_MS + 1000  # its 36 s of waiting shortened


def test_parallel_turns_play_side_by_side():
    pace = [[40 * i, i + 1] for i in range(25)]
    planned = schedule([turn(1, "a" * 25, 0, pace, end_s=1), turn(2, "b" * 25, 0.5, pace, end_s=1.5)])
    one, two = planned["turns"]
    assert two["at"] == 500 and one["segments"][-1][1] == 960 and two["segments"][-1][1] == 1460


# -- the page ------------------------------------------------------------------------------------


async def _finished_duel(owner) -> Debate:
    debate, errors = await sync_to_async(create_debate)(
        {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": 1}, owner=owner
    )
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    return await Debate.objects.aget(pk=debate.pk)


def _get(user, path: str, language: str = "en"):
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    if user:
        client.force_login(user)
    return client.get(path)


def _data(page: str) -> dict:
    found = re.search(r'<script id="replay-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


@pytest.mark.django_db(transaction=True)
async def test_the_replay_of_a_finished_duel_and_who_may_open_it(libraries, fast_llm, alice, bob):
    debate = await _finished_duel(alice)
    turns = [t async for t in Turn.objects.filter(debate=debate).order_by("position")]
    assert all(t.pace and t.pace[-1][1] == len(t.text) for t in turns if t.text), "every streamed turn has its pace"

    response = await sync_to_async(_get)(alice, f"/debates/{debate.pk}/replay/?t=2.5")
    assert response.status_code == 200
    page = response.content.decode()
    data = _data(page)
    assert [t["text"] for t in data["turns"]] == [shown_text(t) for t in turns]
    assert not data["even"] and "at an even pace" not in page
    assert 'data-start="' in page and "Replay controls" in page
    # The replay is linked from the debate's page and its report.
    for path in (f"/debates/{debate.pk}/", f"/debates/{debate.pk}/report/"):
        linked = (await sync_to_async(_get)(alice, path)).content.decode()
        assert f"/debates/{debate.pk}/replay/" in linked, path
    zh = (await sync_to_async(_get)(alice, f"/debates/{debate.pk}/replay/", "zh-hans")).content.decode()
    assert 'lang="zh-hans"' in zh

    # Strangers get a 404; the share link opens it, and the replay's links keep it.
    assert (await sync_to_async(_get)(bob, f"/debates/{debate.pk}/replay/")).status_code == 404
    assert (await sync_to_async(_get)(None, f"/debates/{debate.pk}/replay/")).status_code == 404
    await Debate.objects.filter(pk=debate.pk).aupdate(shared=True)
    shared = await sync_to_async(_get)(None, f"/debates/{debate.pk}/replay/?share={debate.share_token}")
    assert shared.status_code == 200
    assert f"share={debate.share_token}" in shared.content.decode().split('id="replay-url"')[1].split(">")[0]
    wrong = await sync_to_async(_get)(None, f"/debates/{debate.pk}/replay/?share=nope")
    assert wrong.status_code == 404

    # A debate still running has no replay yet (its live page is the place).
    await Debate.objects.filter(pk=debate.pk).aupdate(status=Status.RUNNING)
    assert (await sync_to_async(_get)(alice, f"/debates/{debate.pk}/replay/")).status_code == 404


@pytest.mark.django_db(transaction=True)
async def test_hostile_text_stays_inert_in_the_replay(libraries, fast_llm, alice):
    debate = await _finished_duel(alice)
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)> **bold**"
    first = await Turn.objects.filter(debate=debate).exclude(text="").order_by("position").afirst()
    await Turn.objects.filter(pk=first.pk).aupdate(text=hostile, pace=[[10, len(hostile)]])
    page = (await sync_to_async(_get)(alice, f"/debates/{debate.pk}/replay/?t=x")).content.decode()
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert _data(page)["turns"][0]["text"] == hostile  # the script adds it as text, never as HTML
    assert "<strong>bold</strong>" in page  # its finished form: the live page's sanitised Markdown
