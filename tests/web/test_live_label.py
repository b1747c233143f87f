"""A streaming speech never shows its form's label (issue 27.4, "no raw grammar labels"): the
finished turn was drawn without "正文：", but while it streamed, and for a reader who reloaded
mid-turn, every speech began with it. Real Chromium on a real Agora server, the fake model
streaming a duel speech slowly in the form's parts."""

from __future__ import annotations

import pytest

from debates.templatetags.agora import unlabelled
from tests.web.browser import start
from tests.web.test_stage import DUEL, signed_in

SPEECH = "正文：作为大师，依《坛经·定慧品》，守本宗之路，当下用功，不离日用。\n立场变化：无\n小结：当下用功。"
LIVE = "#transcript .text.live"


def test_the_filter_drops_only_a_leading_speech_label():
    assert unlabelled("正文：作为慧能大师，…") == "作为慧能大师，…"
    assert unlabelled("  Speech: As Huineng, …") == "As Huineng, …"
    assert unlabelled("Speech is silver: …") == "Speech is silver: …"
    assert unlabelled("作为慧能大师，正文：…") == "作为慧能大师，正文：…"  # only at the start
    assert unlabelled("正文") == "正文"  # not arrived whole yet


async def live_text(page) -> str:
    return await page.evaluate(f"(document.querySelector('{LIVE}') || {{}}).textContent || ''")


@pytest.mark.browser
async def test_a_streaming_speech_never_shows_its_label_live_or_after_a_reload(chromium, agora, fake_llm):
    fake_llm.token_delay = 0.08
    fake_llm.script = lambda body: SPEECH if "立场变化" in body["messages"][-1]["content"] else None
    page = await signed_in(chromium, agora, "zh-CN")
    await start(page, agora, DUEL, rounds="1")
    seen = []
    for _ in range(300):
        text = (await live_text(page)).strip()
        if len(text) >= 8:
            seen.append(text)
            if len(seen) >= 3:
                break
        await page.wait_for_timeout(100)
    assert seen, "no speech streamed"
    assert all(not text.startswith("正文") for text in seen), seen
    assert any(text.startswith("作为大师") for text in seen), seen

    await page.reload()  # a reader arriving mid-turn reads the stored text so far
    await page.wait_for_selector(LIVE, timeout=20000)
    text = (await live_text(page)).strip()
    assert text and not text.startswith("正文"), text


@pytest.mark.django_db(transaction=True)
def test_the_page_carries_the_labels_its_script_drops(libraries, alice):
    """One list of speech labels (`BODY_LABELS`): the filter reads it, and the live page hands it
    to its script, which builds its pattern from it (the browser test above drives that)."""
    from debates.engine.reading import BODY_LABELS
    from tests.web.test_audience import make_duel, viewer

    debate = make_duel(alice)
    page = viewer(alice).get(f"/debates/{debate.pk}/").content.decode()
    assert f'data-body-labels="{"|".join(BODY_LABELS)}"' in page
    for label in BODY_LABELS:
        assert unlabelled(f"{label.upper()}： 说") == "说"
