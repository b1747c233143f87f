"""A failed submit of the start form: the page opens on the first field in error (scrolled into
view and focused, even below the fold on a phone) with a count of the fields in error at the top,
in the reader's language. No inline script: agora.js does it under the page's CSP."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.web.browser import choose_format, log_in, shot
from tests.web.test_stage import audit

DESKTOP, PHONE = (1280, 800), (390, 844)


async def failed_submit(page, agora):
    """One persona for a duel (two needed) and rounds of 0: two fields in error, the first
    (the personas) well below the top of a phone's screen."""
    await page.goto(f"{agora.url}/debates/new/")
    await page.fill("#id_topic", "念佛与参禅，哪条路更适合现代人修行？")
    await choose_format(page, "duel")
    await page.check("#persona-huineng")
    await page.fill("#id_rounds", "0")
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#form-errors")


@pytest.mark.browser
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
async def test_a_failed_submit_opens_on_the_first_error_with_a_count(chromium, agora, locale, size):
    page = await chromium.page(locale=locale, width=size[0], height=size[1])
    await log_in(page, agora)
    await failed_submit(page, agora)
    summary = await page.inner_text("#form-errors")
    assert re.search(r"\b2\b", summary) and ("need attention" in summary or "需要" in summary), summary
    for _ in range(50):  # focused by the page's script once the swapped-in form has settled
        focused = await page.evaluate("document.activeElement.closest('.field, fieldset')?.id")
        if focused:
            break
        await page.wait_for_timeout(100)
    assert focused == "field-personas", focused
    for _ in range(50):  # the scroll may be smooth, the page still loading
        top, bottom = await page.evaluate(
            "(() => { const r = document.activeElement.getBoundingClientRect(); return [r.top, r.bottom]; })()"
        )
        if 0 <= top and bottom <= size[1]:
            break
        await page.wait_for_timeout(100)
    assert 0 <= top and bottom <= size[1], (top, bottom, "the focused field is on the screen")
    if size == PHONE:
        assert await page.evaluate("window.scrollY") > 0, "scrolled down to it"
    assert not await audit(page), "axe-core: nothing critical or serious on the form with its errors"
    await shot(page, f"start-errors-{'phone' if size == PHONE else 'desktop'}-{locale[:2]}")


@pytest.mark.django_db
@pytest.mark.usefixtures("libraries", "no_runs")
def test_the_count_counts_fields_not_errors(alice):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    data = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "research_budget": "standard"}
    one = client.post("/debates/new/", {**data, "personas": ["huineng"]}).content.decode()
    assert "1 field needs attention" in one and "data-first-error" in one
    two = client.post("/debates/new/", {**data, "topic": " ", "personas": ["huineng"]}).content.decode()
    assert "2 fields need attention" in two
    fine = client.get("/debates/new/").content.decode()
    assert "need attention" not in fine and "data-first-error" not in fine
