"""A duel through the web (issue 27.1/27.4), on the fake server: an English question's debate is
English in every prompt sent and in its Markdown export; the live page folds the attempt that argued
the other side under the speech that replaced it, marked as discarded; no speech starts with its
grammar label; each summary shows once; the position chart shows what the speech declared.

The library's own text stays as the library wrote it (Chinese): the personas' prompt text and the
cross-critiques (the ammunition); the prompt checks leave those out, the export has none of them."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import translation

from debates import charts, frames, runner
from debates.forms import create_debate
from debates.models import Debate, Turn

pytestmark = pytest.mark.django_db(transaction=True)

CJK = re.compile("[\u3400-\u9fff]")


def user_text(body: dict) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def english_script(body: dict):
    """Duel speeches in the English form; the first speaker's first attempt argues the other side."""
    user = user_text(body)
    if "Position change:" not in user:
        return None  # the close: the server's own English reply
    me = re.search(r"You speak for ([^;]+);", user).group(1)
    if "round 1 of 1" in user and "was sent back" not in user and me == "Huineng":
        return (
            "Speech: As Huineng, I completely agree with Yinguang: nianfo is the safer way.\n"
            "Position change: shifted, to the other side\nSummary: In Huineng's view, nianfo is the safer way."
        )
    return (
        f"Speech: As {me}, I keep to my own gate, as the *Platform Sutra*, chapter 3 says.\n"
        f"Position change: shifted, towards daily practice\nSummary: In {me}'s view, practise here and now."
    )


def chinese_script(body: dict):
    user = user_text(body)
    if "立场变化：" not in user:
        return None
    me = re.search(r"你代表「([^」]+)」", user).group(1)
    if me == "慧能大师" and "被退回重写" not in user:
        return (
            "正文：作为慧能大师，我完全同意印光大师的观点。\n立场变化：转向\n"
            "小结：依慧能大师之见，念佛往生才是最稳妥的路。"
        )
    return (
        f"正文：作为{me}，依《坛经·定慧品》，守本宗之路。\n立场变化：转向，吸收对方一点\n小结：依{me}之见，当下用功。"  # noqa: E501
    )


async def run(owner, topic: str) -> Debate:
    debate, errors = await sync_to_async(create_debate)({"topic": topic, "format": "duel", "rounds": "1"}, owner=owner)
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    return await Debate.objects.aget(pk=debate.pk)


async def get(user, path: str, language: str = "en") -> str:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    await sync_to_async(client.force_login)(user)
    response = await sync_to_async(client.get)(path)
    assert response.status_code == 200, path
    return response.content.decode()


async def test_an_english_duel_is_english_in_its_prompts_and_export(libraries, fast_llm, alice):
    fast_llm.script = english_script
    debate = await run(alice, "Should a busy lay person practise nianfo or Chan meditation today?")
    requests = [r for r in fast_llm.requests if r.path.endswith("/chat/completions")]
    assert len(requests) >= 4  # two speeches, the rewrite, the close
    for request in requests:
        system, user = request.body["messages"][0]["content"], user_text(request.body)
        assert system.startswith("You are ") and "Answer in English" in system
        # the ammunition (the library's critiques and their sources) stays as written: left out here
        user = re.sub(r"## Your ammunition[^\n]*\n(?:\d+\. [^\n]*\n?)*", "", user)
        assert not CJK.search(user), CJK.findall(user)[:20]
    export = await get(alice, f"/debates/{debate.pk}/export.md")
    assert not CJK.search(export), sorted(set(CJK.findall(export)))
    assert "Speech:" not in export and "## Neutral synthesis" in export
    assert "Discarded attempt, written again (not part of the debate)" in export


async def test_the_live_page_folds_the_discarded_attempt_and_shows_each_summary_once(libraries, fast_llm, alice):
    fast_llm.script = chinese_script
    debate = await run(alice, "念佛与参禅，哪条路更适合现代人修行？")
    keys = [k async for k in Turn.objects.filter(debate=debate).values_list("key", flat=True)]
    assert "duel:1:huineng" in keys and "duel:1:huineng:again" in keys
    page = await get(alice, f"/debates/{debate.pk}/", "zh-hans")
    articles = re.findall(r'<article id="turn-\d+"[^>]*data-key="([^"]+)"', page)
    assert "duel:1:huineng" not in articles and "duel:1:huineng:again" in articles
    # the discarded attempt, folded under its replacement and marked
    article = page.split('data-key="duel:1:huineng:again"', 1)[1].split("</article>", 1)[0]
    assert 'class="attempts discarded"' in article and "我完全同意印光大师的观点" in article
    assert article.index("守本宗之路") < article.index("我完全同意")
    # live: the rewrite's frame, as it starts, takes the discarded attempt's article off the transcript
    old = await Turn.objects.aget(debate=debate, key="duel:1:huineng")
    again = await Turn.objects.aget(debate=debate, key="duel:1:huineng:again")
    frame = await sync_to_async(frames.turn)(again, new=True, section=1)
    assert f'<div id="turn-{old.pk}" hx-swap-oob="delete"></div>' in frame and "attempts discarded" in frame
    # no grammar label starts a speech; each summary once
    for text in re.findall(r'<div class="text md">(.*?)</div>', page, re.S):
        assert not re.match(r"\s*<p>\s*正文", text), text
    assert page.count("依慧能大师之见，当下用功。") == 1
    # the report's chart: what the speeches declared (转向), not "loosened"
    report = await Debate.objects.select_related("report").aget(pk=debate.pk)
    with translation.override("en"):
        chart = str(charts.duel_positions(report.report.data))
    assert chart.count(": turned</title>") == 2 and "loosened</title>" not in chart
