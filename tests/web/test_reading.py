"""Reading a debate (issue 27 #4): the result first on a finished debate's page, with a jump link
while it runs; no turn key or pair key in anything a person reads; warnings grouped by kind; the
report's claim line says what was checked; the timer counts the running time across resumes and
the checkpoint. Real Chromium on a real Agora server and the fake model."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3

import pytest

from testkit.servers import AgoraServer
from tests.web.browser import start
from tests.web.test_stage import DESKTOP, DUEL, PHONE, audit, signed_in

pytestmark = [pytest.mark.browser]


async def elapsed(page) -> int:
    """The stage's timer, in seconds."""
    shown = (await page.inner_text("#debate-status [data-elapsed]")).strip()
    assert re.fullmatch(r"\d+(:\d\d)+", shown), shown
    seconds = 0
    for part in shown.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


async def status_is(page, status: str, tries: int = 300) -> None:
    """Wait for the stage to say `status` (Stop and Resume reload the page meanwhile)."""
    for _ in range(tries):
        try:
            if await page.evaluate(f"document.querySelector('#debate-status')?.dataset.status === '{status}'"):
                await page.wait_for_load_state()
                return
        except Exception:  # noqa: BLE001, S110 - the page is navigating: ask again
            pass
        await page.wait_for_timeout(100)
    raise AssertionError(f"the debate is not {status}")


async def press_until(page, button: str, status: str) -> None:
    """Click `button` until the stage says `status`: a click can land while a live frame swaps the
    actions out (the button it hit is gone), which under load left a debate running once."""
    for _ in range(3):
        with contextlib.suppress(Exception):
            await page.click(button, timeout=5000)
        try:
            await status_is(page, status, tries=100)
            return
        except AssertionError:
            continue
    await status_is(page, status)


async def test_the_timer_counts_running_time_across_a_stop_and_a_resume(chromium, agora, fake_llm):
    fake_llm.token_delay = 0.05
    page = await signed_in(chromium, agora, "en-US")
    await start(page, agora, DUEL, rounds="3")
    await page.wait_for_selector("article.turn-running", timeout=20000)
    await page.wait_for_timeout(3600)
    before_stop = await elapsed(page)
    assert before_stop >= 3, before_stop
    await press_until(page, "button.stop", "stopped")
    stopped = await elapsed(page)
    assert stopped >= before_stop
    await page.wait_for_timeout(2200)
    assert await elapsed(page) == stopped, "the timer waits while the debate is stopped"
    await press_until(page, "#debate-actions button[type=submit]", "running")  # Resume
    await page.wait_for_timeout(2200)
    resumed = await elapsed(page)
    # It goes on from where it stopped (it stayed 0:00 after Resume), and not by the stopped time.
    assert stopped + 1 <= resumed <= stopped + 5, (stopped, resumed)
    await page.reload()  # a fresh page reads the same total
    assert abs(await elapsed(page) - resumed) <= 2


# A turn key (speech:1:charlie-munger:1, r2:optimist:resend, host:verdict), a pair key
# (huineng-vs-yinguang) or round 0 as a round ("Host · R0"): none is for people.
TURN_KEY = re.compile(r"(?<![\w/.:-])[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*:[a-z0-9][a-z0-9_-]*(?::[a-z0-9_-]+)*")
PAIR_KEY = re.compile(r"\b[a-z0-9]+(?:-[a-z0-9]+)*-vs-[a-z0-9]+")
ROUND_ZERO = re.compile(r"\bR0\b")
FORMATS = {
    "duel": ("念佛与参禅，哪条路更适合现代人修行？", ("huineng", "yinguang")),
    "panel": ("我们公司明年是否应该把核心交易系统迁到云上？", ()),
    "moderated": ("创业公司该不该追求完美的产品设计？", ("steve-jobs", "charlie-munger", "socrates")),
    "roundtable": (
        "我们要不要把客服系统换成大模型驱动的智能客服？",
        ("devil-advocate", "optimist", "ai-product-manager", "llm-architect"),
    ),
}


MODEL = re.compile(r"default:[\w.-]+")  # a model as provider:model (the comparison names it): not a key


def technical_ids(text: str) -> list[str]:
    text = MODEL.sub("", text)
    return sorted({m.group(0) for p in (TURN_KEY, PAIR_KEY, ROUND_ZERO) for m in p.finditer(text)})


async def readable(page) -> str:
    """What a person can read on the page: its text, the options of its lists, its title."""
    options = await page.eval_on_selector_all("option", "els => els.map(e => e.textContent).join('\\n')")
    return "\n".join([await page.title(), await page.inner_text("body"), options])


async def finish(page, agora, fmt: str) -> int:
    topic, personas = FORMATS[fmt]
    pk = await start(page, agora, topic, fmt=fmt, personas=personas, rounds="1" if fmt == "duel" else "")
    if fmt == "roundtable":
        await page.wait_for_selector("#checkpoint-form", timeout=30000)
        await page.click("#checkpoint-form button[type=submit]")
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    return pk


def test_the_patterns_catch_what_was_reported():
    shown = "慧能 huineng-vs-yinguang · speech:1:charlie-munger:1 · duel:1:huineng:again · Host · R0 · r2:optimist"
    assert technical_ids(shown) == [
        "R0",
        "duel:1:huineng:again",
        "huineng-vs-yinguang",
        "r2:optimist",
        "speech:1:charlie-munger:1",
    ]
    assert not technical_ids("12:05 · 0:03 · R1 · https://example.com/a:b · Round 1 · de Bono · 第 1 轮")


@pytest.mark.parametrize("fmt", FORMATS)
async def test_people_never_see_turn_or_pair_keys(chromium, agora, fake_llm, fmt):
    fake_llm.token_delay = 0.0
    page = await signed_in(chromium, agora, "en-US")
    seen = {}
    topic, _personas = FORMATS[fmt]
    await page.goto(f"{agora.url}/debates/new/?format={fmt}")
    await page.fill("#id_topic", topic)
    await page.wait_for_timeout(1200)  # the suggestion box (the duel's pair) follows the question
    seen["start form"] = await readable(page)
    pk = await finish(page, agora, fmt)
    seen["live page, streamed"] = await readable(page)
    await page.reload()
    seen["live page, finished"] = await readable(page)
    await page.goto(f"{agora.url}/debates/{pk}/report/")
    seen["report page"] = await readable(page)
    for path in ("export.md", "report.md", "transcript.md"):
        response = await page.context.request.get(f"{agora.url}/debates/{pk}/{path}")
        if response.ok:
            seen[path] = await response.text()
    chinese = await signed_in(chromium, agora, "zh-CN")
    await chinese.goto(f"{agora.url}/debates/{pk}/report/")
    seen["report page, Chinese"] = await readable(chinese)
    if fmt == "duel":  # a blind comparison, before and after the vote; a fork of the debate
        await page.click("#compare-form button[type=submit]")
        await page.wait_for_selector("#vote-form", timeout=30000)
        seen["comparison"] = await readable(page)
        await page.check("input[name=vote][value=A]")
        await page.click("#vote-form button[type=submit]")
        await page.wait_for_selector("#voted")
        seen["comparison, voted"] = await readable(page)
        await page.goto(f"{agora.url}/comparisons/")
        seen["all comparisons"] = await readable(page)
        await page.goto(f"{agora.url}/debates/{pk}/report/")
        await page.select_option("#fork-turn", index=1)
        await page.click("#fork-form button[type=submit]")
        await page.wait_for_selector("#debate-report h2", timeout=60000)
        fork = int(re.search(r"/debates/(\d+)/", page.url).group(1))
        await page.goto(f"{agora.url}/debates/{fork}/report/")
        seen["fork's report"] = await readable(page)
        assert "Forked from debate" in seen["fork's report"]
    await page.goto(f"{agora.url}/")
    seen["home"] = await readable(page)
    found = {where: technical_ids(text) for where, text in seen.items()}
    assert not any(found.values()), {where: ids for where, ids in found.items() if ids}


async def top(page, selector: str) -> float:
    return await page.evaluate(f"document.querySelector('{selector}').getBoundingClientRect().top + scrollY")


async def test_the_result_comes_first_warnings_by_kind_and_the_claim_line_says_what_was_checked(
    chromium, agora, fake_llm
):
    fake_llm.token_delay = 0.0
    page = await signed_in(chromium, agora, "en-US")
    pk = await start(page, agora, DUEL, personas=("huineng", "yinguang"), rounds="2")
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    for where in (f"/debates/{pk}/", f"/debates/{pk}/report/"):
        await page.goto(f"{agora.url}{where}")
        verdict = "#debate-report" if where.count("/") == 3 else "section.verdict"
        # The result first: above the warnings and the transcript.
        assert await top(page, verdict) < await top(page, "ul.warnings"), where
        transcript = "#transcript" if verdict == "#debate-report" else "section.transcript-md"
        assert await top(page, verdict) < await top(page, transcript), where
        # Warnings by kind: the speeches that cited no source are one line, with their count, folded.
        uncited = page.locator('ul.warnings > li[data-code="uncited"]')
        assert await uncited.count() == 1, where
        count = int(await uncited.get_attribute("data-count") or 1)
        assert count == 4  # the fake model cites nothing: 2 rounds × 2 speakers
        assert f"({count} of this kind)" in await uncited.locator("summary").inner_text()
        assert not await uncited.locator("details").evaluate("d => d.open")
        assert await uncited.locator("details li").count() == count - 1
        # The claim line says what the check found, not that every claim carries its source.
        said = await page.inner_text(verdict)
        assert "Every doctrinal claim carries its source" not in said
        assert "No speech cites a source" in said, said[:400]
    # Far down the transcript, a way up to the result.
    await page.goto(f"{agora.url}/debates/{pk}/")
    jump = page.locator("#jump-to-result")
    assert await jump.is_hidden(), "the result is in view: no link"
    await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    await jump.wait_for(state="visible", timeout=3000)
    await jump.click()
    await page.wait_for_timeout(300)
    assert await page.evaluate("document.getElementById('report-title').getBoundingClientRect().top") >= 0
    assert await page.evaluate("document.activeElement.id") == "report-title"


@pytest.fixture
def fresh_agora(tmp_path, template_db, fake_llm_server):
    """An Agora with no account yet: what the setup link opens."""
    server = AgoraServer(tmp_path, fake_llm_server.base_url, template_db)
    with sqlite3.connect(server.db) as db:
        db.execute("DELETE FROM auth_user")
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
async def test_a_newcomers_pages_have_no_serious_accessibility_problem(chromium, agora, fresh_agora, fake_llm, locale):
    """axe-core on every page a newcomer meets, at desktop and phone sizes (the live page while it
    streams is audited in test_live_audit.py)."""
    fake_llm.token_delay = 0.0
    problems = {}

    async def check(page, name: str) -> None:
        for width, height in (DESKTOP, PHONE):
            await page.set_viewport_size({"width": width, "height": height})
            found = await audit(page)
            if found:
                problems[f"{name} at {width}"] = found

    newcomer = await chromium.page(locale=locale)
    await newcomer.goto(f"{fresh_agora.url}/setup/")
    await check(newcomer, "setup")
    await newcomer.fill("#id_code", "not-a-code")
    await newcomer.fill("#id_username", "owner")
    for field in ("#id_password1", "#id_password2"):
        await newcomer.fill(field, "a-long-enough-password-1")
    await newcomer.click("button[type=submit]")
    await newcomer.wait_for_selector(".errorlist")
    await check(newcomer, "setup with an error")
    await newcomer.goto(f"{agora.url}/accounts/login/")
    await check(newcomer, "login")

    page = await signed_in(chromium, agora, locale)
    await page.goto(f"{agora.url}/debates/new/")
    await check(page, "start form")
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#form-errors")
    await check(page, "start form with errors")
    pk = await start(page, agora, DUEL, personas=("huineng", "yinguang"), rounds="1")
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    await page.reload()
    await check(page, "finished debate")
    await page.goto(f"{agora.url}/debates/{pk}/report/")
    await check(page, "report")
    await page.click("#compare-form button[type=submit]")
    await page.wait_for_selector("#vote-form", timeout=30000)
    await check(page, "comparison")
    await page.check("input[name=vote][value=A]")
    await page.click("#vote-form button[type=submit]")
    await page.wait_for_selector("#voted")
    await check(page, "comparison, voted")
    await page.goto(f"{agora.url}/comparisons/")
    await check(page, "all comparisons")
    await page.goto(f"{agora.url}/")
    await check(page, "home")
    assert not problems, json.dumps(problems, ensure_ascii=False, indent=1)


async def test_the_timer_waits_at_the_checkpoint_and_goes_on_from_there(chromium, agora, fake_llm):
    fake_llm.token_delay = 0.05
    page = await signed_in(chromium, agora, "en-US")
    topic, personas = FORMATS["roundtable"]
    await start(page, agora, topic, fmt="roundtable", personas=personas)
    await page.wait_for_selector("#checkpoint-form", timeout=60000)
    at_checkpoint = await elapsed(page)
    assert at_checkpoint >= 2, at_checkpoint
    await page.wait_for_timeout(2200)
    assert await elapsed(page) == at_checkpoint, "the timer waits with the debate"
    await page.click("#checkpoint-form button[type=submit]")
    await status_is(page, "running")
    await page.wait_for_timeout(1500)
    # It goes on from the checkpoint's total (it restarted from 0:00), not counting the wait.
    assert at_checkpoint + 1 <= await elapsed(page) <= at_checkpoint + 5
