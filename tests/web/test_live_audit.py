"""axe-core on the live page while a turn streams, in every format's shape and both languages:
the panel (parallel turns, the token meter), the moderated format, a reasoning model's turn with its
thinking part. test_stage.py audits a duel; issue 27 reported `aria-prohibited-attr` (serious) on a
streaming page, so each of these is audited several times as frames arrive, and at the phone size."""

from __future__ import annotations

import json

import pytest

from testkit.fake_openai import Reply
from testkit.prose import prose
from tests.web.browser import start
from tests.web.test_stage import PHONE, audit, signed_in

pytestmark = [pytest.mark.browser]

CASES = {
    "panel": ("我们公司明年是否应该把核心交易系统迁到云上？", ()),
    "moderated": ("创业公司该不该追求完美的产品设计？", ("steve-jobs", "charlie-munger", "socrates")),
    "thinking": ("念佛与参禅，哪条路更适合现代人修行？", ("huineng", "zhiyi")),
}


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
@pytest.mark.parametrize("case", CASES)
async def test_no_critical_or_serious_problem_while_a_turn_streams(chromium, agora, fake_llm, case, locale):
    fake_llm.token_delay = 0.03
    if case == "thinking":
        fake_llm.script = lambda body: Reply(
            thinking="先想一想。" + prose(150), thinking_as="reasoning_content", token_delay=0.01
        )
    topic, personas = CASES[case]
    page = await signed_in(chromium, agora, locale, PHONE)
    await start(page, agora, topic, fmt="duel" if case == "thinking" else case, personas=personas)
    await page.wait_for_selector("article.turn-running", timeout=20000)
    problems = {}
    for moment in range(3):
        found = await audit(page)
        if found:
            problems[f"streaming, sample {moment}"] = found
        await page.wait_for_timeout(700)
    assert await page.locator("article.turn-running").count() or await page.locator("article.turn-done").count()
    assert not problems, json.dumps(problems, ensure_ascii=False, indent=1)
    # The audit does see the reported kind of problem: a name on an element whose role forbids one
    # (axe calls it serious on an empty one, such as an icon or a turn's text before it streams).
    await page.evaluate(
        "document.querySelector('p.crumbs').insertAdjacentHTML('beforeend', '<span aria-label=x></span>')"
    )
    seen = await audit(page)
    assert any(p.startswith("aria-prohibited-attr (serious)") for p in seen), seen
