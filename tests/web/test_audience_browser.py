"""The live audience (#30) in real Chromium: three viewers of one duel (its owner, a signed-in user
with the share link, an anonymous browser with it) vote before and after and each sees the others'
votes arrive live; the report's swing matches; a floor question the owner takes reaches every
speaker's next prompt and the stage, its hostile text inert. axe-core finds nothing serious in the
new parts, in English and Chinese, on a desktop and a phone."""

from __future__ import annotations

import pytest

from tests.web.browser import log_in, shot, start
from tests.web.test_stage import AXE, DESKTOP, PHONE, until

pytestmark = [pytest.mark.browser]
DUEL = "念佛与参禅，哪条路更适合现代人修行？"
HOSTILE = '<img src=x onerror="window.pwned=1">问：<script>window.pwned=2</script>一天只有一小时的人怎么办？'


async def page_for(chromium, agora, locale, size, user=None):
    page = await chromium.page(locale=locale, width=size[0], height=size[1])
    if user:
        await log_in(page, agora, user)
    return page


async def audit_part(page, selector: str) -> list[str]:
    """axe-core's critical and serious violations inside `selector`."""
    await page.evaluate(AXE)
    result = await page.evaluate(f"axe.run(document.querySelector({selector!r}), {{resultTypes: ['violations']}})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("critical", "serious")
    ]


def tally_is(side: str, phase: str, n: int) -> str:
    cell = f"document.querySelector('#audience-tally tr[data-side=\"{side}\"] td.{phase}')"
    return f"({cell} || {{}}).dataset?.votes === '{n}'"


async def share(owner) -> str:
    await owner.click("form.share button[type=submit]")
    await owner.wait_for_selector("#share-link")
    return await owner.input_value("#share-link")


async def test_three_viewers_vote_before_and_after_and_see_each_other_live(chromium, agora, fake_llm):
    # The first round lasts while three people vote, however slow the machine (a CI run under
    # load once closed the "before" vote at 0.08 s a token before the third click); the delay is
    # read per token, so the rest of the run goes quickly once the votes are in.
    fake_llm.token_delay = 0.4
    owner = await page_for(chromium, agora, "en-US", DESKTOP, "alice")
    pk = await start(owner, agora, DUEL, rounds="1")
    link = await share(owner)
    friend = await page_for(chromium, agora, "zh-CN", PHONE, "bob")
    stranger = await page_for(chromium, agora, "en-US", PHONE)
    for page in (friend, stranger):
        await page.goto(link)
    pages = (owner, friend, stranger)
    for page in pages:
        await page.wait_for_selector("#audience .vote-form button.vote-before")
    a, b = [await x.get_attribute("value") for x in await owner.query_selector_all(".vote-form button.vote-before")]

    await owner.click(f'.vote-form button[value="{a}"]')
    await friend.click(f'.vote-form button[value="{b}"]')
    await stranger.click(f'.vote-form button[value="{a}"]')
    await until(stranger, tally_is(a, "before", 2), timeout=10)
    await stranger.click(f'.vote-form button[value="{b}"]')  # a second vote replaces the first
    for page in pages:  # each sees the others' votes arrive, without reloading
        await until(page, f"{tally_is(a, 'before', 1)} && {tally_is(b, 'before', 2)}", timeout=10)
    assert "Your vote before:" in await stranger.inner_text("#audience-mine")
    await shot(owner, "audience-before")
    await shot(friend, "audience-before-phone-zh")
    for page, where in ((owner, "en desktop"), (friend, "zh phone")):
        assert not await audit_part(page, "#audience"), where
    fake_llm.token_delay = 0.01

    # The report comes in: the "after" vote opens on every page by itself.
    for page in pages:
        await page.wait_for_selector("#audience .vote-form button.vote-after", timeout=90000)
    await owner.click(f'.vote-form button[value="{b}"]')
    await friend.click(f'.vote-form button[value="{b}"]')
    await stranger.click(f'.vote-form button[value="{a}"]')
    for page in pages:
        await until(page, f"{tally_is(a, 'after', 1)} && {tally_is(b, 'after', 2)}", timeout=10)
    # Before: a 33%, b 67%. The anonymous browser changes its after vote: b goes to 100%, +33 points.
    await stranger.click(f'.vote-form button[value="{b}"]')
    for page in pages:
        await until(page, f"{tally_is(a, 'after', 0)} && {tally_is(b, 'after', 3)}", timeout=10)
    swing = await owner.get_attribute(f'#audience-tally tr[data-side="{b}"] td.swing', "data-swing")
    assert swing == "33"  # 67% → 100%
    await shot(stranger, "audience-after-phone-en")
    # Questions close with the report: the form drawn while it ran goes with the next frame.
    assert not await stranger.is_visible("#audience-ask")
    await owner.goto(f"{agora.url}/debates/{pk}/report/")
    result = await owner.inner_text("#votes-result")
    assert "+33 points" in result and "-33 points" in result, result
    assert not await audit_part(owner, "#votes-result")
    await friend.goto(f"{agora.url}/debates/{pk}/report/")
    assert "+33" in await friend.inner_text("#votes-result")
    assert not await audit_part(friend, "#votes-result"), "zh phone report"


async def test_a_floor_question_taken_by_the_owner_reaches_every_speaker_and_the_stage(chromium, agora, fake_llm):
    fake_llm.token_delay = 0.06
    owner = await page_for(chromium, agora, "zh-CN", DESKTOP, "alice")
    await start(owner, agora, DUEL, rounds="2")
    link = await share(owner)
    stranger = await page_for(chromium, agora, "en-US", PHONE)
    await stranger.goto(link)
    await stranger.fill("#audience-question", HOSTILE)
    await stranger.click("#audience-ask button[type=submit]")
    await owner.wait_for_selector("#audience .questions li .q-text")  # arrives live at the owner's
    assert not await audit_part(stranger, "#audience"), "en phone"
    await owner.click("#audience-moderation summary")
    await owner.click("#take-top")
    for page in (owner, stranger):
        await page.wait_for_selector("#audience .from-the-floor li", timeout=10000)
        shown = await page.inner_text("#audience .from-the-floor")
        assert "<script>window.pwned=2</script>" in shown and '<img src=x onerror="window.pwned=1">' in shown
        assert await page.evaluate("window.pwned === undefined")
    assert not await audit_part(owner, "#audience"), "zh desktop"
    await shot(owner, "audience-floor-zh")
    await owner.wait_for_selector("#debate-report h2", timeout=120000)
    prompts = [r.body for r in fake_llm.chat_requests]
    asked = [b for b in prompts if "一天只有一小时的人怎么办" in b["messages"][-1]["content"]]
    speakers = {b["messages"][0]["content"].split("」", 1)[0] for b in asked if "你是「" in b["messages"][0]["content"]}
    assert len(speakers) >= 2, speakers  # both masters read it (and the closing synthesis)
    for body in asked:
        assert "来自观众席的提问" in body["messages"][-1]["content"]
        assert "一天只有一小时的人怎么办" not in body["messages"][0]["content"]
