"""The blind comparison in real Chromium against a real daphne: 20 comparisons of one debate,
the names hidden until each vote, both A/B orders seen, and the tally counting every vote."""

from __future__ import annotations

import pytest
import pytest_asyncio

from tests.web.browser import log_in, start

pytestmark = [pytest.mark.browser]


async def test_blind_comparisons_random_order_names_after_the_vote(page_for_comparisons, agora, fake_llm):
    """Votes through the page until both orders have been shown (three at least, twenty at most:
    a fair draw needs more than twenty once in half a million runs); the tally counts each vote
    for the arm that was A. Twenty draws without the browser are tested in test_comparison.py."""
    page = page_for_comparisons
    fake_llm.token_delay = 0.0
    pk = await start(page, agora, "念佛与参禅，哪条路更适合现代人修行？", personas=("huineng", "yinguang"), rounds="1")
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    first_arms = []
    while len(first_arms) < 20 and (len(first_arms) < 3 or len(set(first_arms)) < 2):
        await page.goto(f"{agora.url}/debates/{pk}/report/")
        await page.click("#compare-form button[type=submit]")
        await page.wait_for_selector("#answer-A", timeout=30000)
        assert await page.locator("[data-arm]").count() == 0  # no names before the vote
        await page.check('input[name="vote"][value="A"]')
        await page.click("#vote-form button[type=submit]")
        await page.wait_for_selector("#voted")
        first_arms.append(await page.get_attribute("#answer-A [data-arm]", "data-arm"))
    assert set(first_arms) == {"debate", "single"}, first_arms  # both orders shown
    await page.goto(f"{agora.url}/comparisons/")
    row = page.locator("#tally tbody tr")
    assert await row.count() == 1
    counted = (await row.get_attribute("data-debate-won"), await row.get_attribute("data-total"))
    assert counted == (str(first_arms.count("debate")), str(len(first_arms)))  # every vote was A


@pytest_asyncio.fixture(loop_scope="session")  # the browser's loop (tests/conftest.py)
async def page_for_comparisons(browser_page, agora):
    await log_in(browser_page, agora)
    return browser_page
