"""Icons that do not depend on an emoji font: the roundtable's veto mark (⛔) and the warnings'
⚠️ are drawn on a page as CSS shapes with a text alternative (an empty box without an emoji font
before); exports keep the characters; nothing inside a tag's attributes is touched."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import translation

from debates import runner
from debates.forms import create_debate
from debates.models import Debate
from debates.rendering import render_markdown, with_icons
from tests.web.browser import log_in, shot

EMOJI = re.compile("[\u2600-\u27bf\ufe0f\U0001f000-\U0001ffff]")
VETO = '1. ⛔ 两周试点。\n2. 建立评测集，见 [说明](https://example.org "⛔ 注")。\n\n> ⚠️ 证据不足'


def text_of(html: str) -> str:
    return re.sub(r"<[^>]*>", "", html)


def test_markdown_draws_its_icons_with_a_text_alternative():
    with translation.override("en"):
        html = render_markdown(VETO)
        escaped = with_icons("⚠️ <b>")
    assert not EMOJI.search(text_of(html)), html
    assert '<span class="icon icon-veto" role="img" aria-label="Vetoed"></span> 两周试点' in html
    assert '<span class="icon icon-warn" role="img" aria-label="Warning"></span> 证据不足' in html
    assert 'title="⛔ 注"' in html, "an attribute keeps its text"
    assert escaped == '<span class="icon icon-warn" role="img" aria-label="Warning"></span> &lt;b&gt;'


@pytest.mark.django_db(transaction=True)
async def test_warnings_on_the_live_page_and_the_report_draw_their_icon(libraries, fast_llm, alice):
    debate, errors = await sync_to_async(create_debate)(
        {"topic": "我们的客服产品要不要引入 RAG 知识库？", "format": "roundtable", "no_interrupt": True}, owner=alice
    )
    assert not errors and await runner.execute(debate.pk) == "done"
    warning = "⚠️ Cross-critique covers this pair in one direction only: the debate may be weaker."
    await Debate.objects.filter(pk=debate.pk).aupdate(warnings=[{"code": "one_sided_coverage", "text": warning}])
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    for path in (f"/debates/{debate.pk}/", f"/debates/{debate.pk}/report/"):
        page = (await sync_to_async(client.get)(path)).content.decode()
        listed = re.search(r'<ul[^>]*class="warnings"[^>]*>(.*?)</ul>', page, re.DOTALL).group(1)
        assert 'role="img" aria-label="Warning"></span> Cross-critique covers this pair' in listed, path
        assert not EMOJI.search(text_of(listed)), listed


@pytest.mark.browser
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
async def test_the_icons_are_drawn_without_an_emoji_font(chromium, agora, locale):
    """The page's own stylesheet draws them: each has a size, a colour, and its name for a screen
    reader (Chromium's accessibility tree)."""
    page = await chromium.page(locale=locale)
    await log_in(page, agora)
    with translation.override("en"):
        html = str(render_markdown(VETO))
    await page.evaluate(
        "(html) => { document.querySelector('main').innerHTML = '<div class=md>' + html + '</div>'; }", html
    )
    for name in ("veto", "warn"):
        icon = page.locator(f".icon-{name}").first
        box = await icon.bounding_box()
        assert box and box["width"] >= 10 and box["height"] >= 10, (name, box)
        colour = await icon.evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), (name, colour)
    assert await page.get_by_role("img", name="Vetoed").count() == 1
    assert await page.get_by_role("img", name="Warning").count() == 1
    await shot(page, f"icons-{locale[:2]}")
