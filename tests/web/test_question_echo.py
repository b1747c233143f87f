"""A speech whose first line only says the debate's question again (the bundled model opened with
it in both languages) is shown without that line: on the live page, in the frame that draws the
finished turn for every viewer, and in the exports (tests/engine/test_reading.py)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from debates import frames
from debates.models import Turn
from tests.security.test_admission import finished_duel

pytestmark = pytest.mark.django_db(transaction=True)


def speeches(html: str) -> list[str]:
    return re.findall(r'<div class="text md">(.*?)</div>', html, re.S)


def echoed(alice) -> Turn:
    debate = finished_duel(alice)
    debate.turns.update(text=f"{debate.question}\n\n念佛最稳妥。")
    return debate.turns.get()


def test_the_live_page_shows_the_speech_without_the_questions_echo(libraries, alice):
    turn = echoed(alice)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(alice)
    (shown,) = speeches(client.get(f"/debates/{turn.debate_id}/").content.decode())
    assert "念佛最稳妥。" in shown and turn.debate.question not in shown


def test_the_finished_turns_frame_leaves_the_echo_out_without_asking_for_the_debate(libraries, alice):
    turn = echoed(alice)
    fresh = Turn.objects.get(pk=turn.pk)
    fresh.debate = turn.debate  # as the sink gives it the debate it has just read
    with CaptureQueriesContext(connection) as seen:
        (shown,) = speeches(frames.turn(fresh, new=False))
    assert "念佛最稳妥。" in shown and turn.debate.question not in shown
    assert not [q for q in seen.captured_queries if '"debates_debate"' in q["sql"]]


async def test_the_sink_hands_its_frames_the_debate_it_has_read(db, monkeypatch):
    """The finished turn's frame (drawn for every viewer) gets the debate the sink has just read,
    so the speech it draws leaves the question's echo out without a query for the debate."""
    from debates.engine import events as ev
    from debates.models import Debate
    from debates.sink import DjangoSink
    from debates.templatetags.agora import speech

    debate = await Debate.objects.acreate(question="Rust or Go next?", format="duel")
    drawn = []
    monkeypatch.setattr(
        frames, "turn", lambda turn, **kw: drawn.append((Turn.debate.is_cached(turn), speech(turn))) or ""
    )
    monkeypatch.setattr(frames, "watched", lambda *args, **kwargs: ["en"])  # a viewer is there
    sink = DjangoSink(debate.pk, frame_interval=60)
    await sink.open()
    await sink.emit(ev.TurnStarted("k", 1, "duel", "a", "A", [{"role": "user", "content": "q"}]))
    await sink.emit(ev.TurnFinished("k", "Rust or Go next?\n\nGo: it ships sooner.", "Go.", 10, 5))
    await sink.flush()
    assert drawn and all(cached for cached, _ in drawn), drawn
    assert drawn[-1][1] == "Go: it ships sooner."
