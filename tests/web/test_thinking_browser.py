"""A reasoning model's thinking in real headless Chromium (issue 26): while a thinking turn
streams, the turn shows a collapsed "Thinking" part that fills live, apart from the speech; after
a reload the finished turns keep it, still collapsed; on a laptop and on a phone, in English and
Chinese, nothing wider than the screen. Set AGORA_SCREENSHOTS=/some/folder to keep the pictures."""

from __future__ import annotations

import pytest

from testkit.fake_openai import Reply
from testkit.prose import prose
from tests.web.browser import export, log_in, shot, start

pytestmark = [pytest.mark.browser]

MARK = "ZQXTHINK"
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
LOCALES = {"en": "en-US", "zh": "zh-CN"}
SUMMARY = {"en": "Thinking", "zh": "思考过程"}
THINKING = (
    f"{MARK} Let me weigh the question before I answer. First the premises: what does each path ask of a "
    "person who works all day? Then the objections, one by one, and <b>whether</b> they hold. "
) + prose(150)  # ordinary thinking never repeats a passage: the loop cut would stop it


def thinker(body: dict) -> Reply:
    return Reply(thinking=THINKING, thinking_as="reasoning_content", token_delay=0.01)


async def fits(page, name: str) -> None:
    widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"{name}: the page is {widths[0]}px wide on a {widths[1]}px screen"


async def thinking_parts(page) -> list[dict]:
    return await page.eval_on_selector_all(
        "article.turn details.thinking",
        """els => els.map(d => ({open: d.open, shown: d.getBoundingClientRect().height > 0,
              summary: d.querySelector('summary').textContent.trim(),
              text: d.querySelector('.thinking-text').textContent,
              speech: d.closest('article').querySelector('.text').textContent}))""",
    )


@pytest.mark.parametrize("lang", LOCALES)
async def test_thinking_streams_collapsed_and_stays_after_a_reload(chromium, agora, fake_llm, lang):
    fake_llm.script = thinker
    page = await chromium.page(locale=LOCALES[lang], width=SIZES["desktop"][0], height=SIZES["desktop"][1])
    await log_in(page, agora)
    pk = await start(page, agora, "念佛与参禅，哪条路更适合现代人修行？", personas=("huineng", "zhiyi"), rounds="1")

    # Live: the running turn's thinking part appears (closed) once thinking streams, and fills.
    await page.wait_for_selector("article.turn-running details.thinking:has(.thinking-text:not(:empty))", timeout=20000)
    live = [p for p in await thinking_parts(page) if p["shown"]]
    assert live and all(not p["open"] for p in live), "collapsed by default"
    assert all(MARK in p["text"] and MARK not in p["speech"] for p in live), "apart from the speech"
    assert all(p["summary"] in (SUMMARY[lang], SUMMARY["en"]) for p in live)
    for size, (width, height) in SIZES.items():
        await page.set_viewport_size({"width": width, "height": height})
        await fits(page, f"live-{lang}-{size}")
        await shot(page, f"thinking-live-{lang}-{size}")
    await page.click("article.turn-running details.thinking summary")
    assert await page.locator("article.turn-running .thinking-text").first.is_visible()
    await shot(page, f"thinking-live-open-{lang}-phone")

    # After the debate and a reload: every speech keeps its thinking, collapsed.
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    await page.reload()
    await page.wait_for_selector("#debate-report h2")
    data = await export(page, agora, pk)
    parts = await thinking_parts(page)
    assert len(parts) == len(data["turns"]) and all(MARK in t["thinking"] for t in data["turns"])
    assert all(p["shown"] and not p["open"] and MARK in p["text"] and MARK not in p["speech"] for p in parts)
    assert all("<b>" in p["text"] for p in parts), "the thinking is text: its markup shown, never run"
    assert not await page.locator(".thinking-text b").count()
    for size, (width, height) in SIZES.items():
        await page.set_viewport_size({"width": width, "height": height})
        await fits(page, f"reloaded-{lang}-{size}")
        await shot(page, f"thinking-reloaded-{lang}-{size}")
    meter = await page.text_content("#debate-meter")
    assert any(word in meter for word in ("of which thinking", "思考")), meter


@pytest.mark.parametrize("lang", LOCALES)
async def test_the_start_form_offers_reasoning_effort_where_the_model_reasons(chromium, agora, lang):
    page = await chromium.page(locale=LOCALES[lang], width=SIZES["phone"][0], height=SIZES["phone"][1])
    await log_in(page, agora)
    await page.goto(f"{agora.url}/debates/new/")
    await page.click("details.advanced summary")
    effort = page.locator("#field-reasoning_effort")
    assert not await effort.is_visible(), "the server's own model does not reason: no effort offered"
    await page.fill("#id_model", "o4-mini")
    assert await effort.is_visible()
    await page.select_option("#id_reasoning_effort", "high")
    await effort.scroll_into_view_if_needed()
    await shot(page, f"start-effort-{lang}-phone")
    await fits(page, f"start-effort-{lang}")
    await page.fill("#id_model", "gpt-4o-mini")
    assert await effort.is_visible(), "a chosen effort stays in view (the form says why it is refused)"
    await page.select_option("#id_reasoning_effort", "")
    await page.fill("#id_model", "deepseek/deepseek-r1:14b")
    assert await effort.is_visible()
    await page.fill("#id_model", "gpt-4o-mini")
    assert not await effort.is_visible()
