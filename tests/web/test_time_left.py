"""The live stage's estimate of the time left (issue 27 #3): drawn with the stage from the rows
(debates/time_left.py over debates/engine/estimate.py), "estimating…" before a turn has finished,
absent once the debate is not running; counted down on the page between stages. Real Chromium on
a real Agora server and the fake model streaming slowly. Before, the stage had no estimate at all."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone, translation

from debates import frames
from debates.models import Debate, Status, Turn
from tests.web.browser import shot, start
from tests.web.test_stage import DESKTOP, DUEL, PHONE, overflow, signed_in

TIME_LEFT = "#debate-status [data-time-left]"


def running_duel(owner, **fields) -> Debate:
    fields = {
        "status": Status.RUNNING,
        "rounds_planned": 1,
        "running_seconds": 40.0,
        "started_at": timezone.now(),
        **fields,
    }
    return Debate.objects.create(owner=owner, question=DUEL, format="duel", **fields)


def turn(debate, key, position, speaker, **fields) -> Turn:
    return Turn.objects.create(
        debate=debate, key=key, position=position, round=1, phase="duel", speaker_slug=speaker, **fields
    )


def stage(debate: Debate, language: str = "en") -> str:
    with translation.override(language):
        return frames.status(Debate.objects.get(pk=debate.pk))


@pytest.mark.django_db
def test_the_stage_says_estimating_until_a_turn_has_finished_then_the_time_left(alice):
    debate = running_duel(alice)
    turn(debate, "duel:1:a", 1, "a", text="念" * 50)  # streaming, nothing finished: no rate yet
    assert "estimating…" in stage(debate)
    assert 'data-time-left=""' in stage(debate)
    Turn.objects.filter(key="duel:1:a").update(state=Turn.State.DONE, text="念" * 300, completion_tokens=300)
    turn(debate, "duel:1:b", 2, "b", text="念" * 100)  # 100 tokens streamed of the second speech
    Debate.objects.filter(pk=debate.pk).update(completion_tokens=300)
    drawn = stage(debate)
    # 400 tokens in 40 s: 10 a second. Left: the second speech at the first one's 300 (200 more)
    # and the close at its allowance (700) times how full the speech ran (300/420): 500. 70 s.
    seconds = int(re.search(r'data-time-left="(\d+)"', drawn).group(1))
    assert seconds in (70, 71), seconds  # a second may pass while it is drawn
    assert "about 1 min left" in drawn
    assert 'role="timer"' in drawn and 'aria-live="off"' in drawn  # a timer: not announced as it changes
    assert 'data-soon="less than a minute left"' in drawn and 'data-minutes="about # min left"' in drawn
    assert "data-time-left" in stage(debate, "zh-hans")  # drawn for Chinese readers too


@pytest.mark.django_db
def test_no_estimate_once_the_debate_is_not_running(alice):
    debate = running_duel(alice, status=Status.DONE, finished_at=timezone.now() + timedelta(seconds=1))
    assert "data-time-left" not in stage(debate)


async def seconds_left(page) -> int | None:
    """The page's countdown, in seconds (None while estimating)."""
    return await page.evaluate(
        f"""(() => {{
          const out = document.querySelector("{TIME_LEFT}");
          if (!out || !out.dataset.timeLeft || !out.agoraArrived) return null;
          return parseInt(out.dataset.timeLeft, 10) - Math.floor((Date.now() - out.agoraArrived) / 1000);
        }})()"""
    )


@pytest.mark.browser
@pytest.mark.parametrize(("locale", "size"), [("en-US", DESKTOP), ("zh-CN", PHONE)])
async def test_a_live_duel_shows_a_time_left_that_goes_down(chromium, agora, fake_llm, locale, size):
    fake_llm.token_delay = 0.06  # about 16 tokens a second
    page = await signed_in(chromium, agora, locale, size)
    await start(page, agora, DUEL, rounds="2")
    await page.wait_for_selector(TIME_LEFT, timeout=20000)
    shown = []
    for _ in range(400):  # until a turn has finished and the stage has a rate
        left = await seconds_left(page)
        if left is not None:
            shown.append(left)
            break
        await page.wait_for_timeout(100)
    assert shown, "no estimate after the first turn"
    words = (await page.inner_text(TIME_LEFT)).strip()
    assert words and words != "estimating…" and "#" not in words, words
    assert await overflow(page) == 0  # the stage line wraps on a phone
    await shot(page, f"time-left-{locale}-{size[0]}")
    for _ in range(30):  # it counts down between stages and is estimated again at each
        await page.wait_for_timeout(1000)
        if not await page.locator(TIME_LEFT).count():
            break
        left = await seconds_left(page)
        if left is not None:
            shown.append(left)
    assert len(shown) >= 3, shown
    print("seconds left, each second:", shown)
    assert shown[-1] < shown[0], shown
    falls = sum(1 for a, b in zip(shown, shown[1:], strict=False) if b < a)
    assert falls >= len(shown) // 2, shown  # mostly down, not only at the end
