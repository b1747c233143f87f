"""End to end in real headless Chromium (Debian's package, driven by Playwright's async API):
fill the form, watch text stream in from the fake OpenAI server, reload mid-stream, end on the
report. Set AGORA_SCREENSHOTS=docs/screenshots to refresh the README's pictures."""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio

from tests.web.browser import (
    assert_exactly_once,
    export,
    finished,
    log_in,
    observe_stream,
    shot,
    start,
)

pytestmark = [pytest.mark.browser]


@pytest_asyncio.fixture(loop_scope="session")  # the browser's loop (tests/conftest.py)
async def page(browser_page, agora):
    await log_in(browser_page, agora)
    return browser_page


async def test_duel_streams_survives_reloads_and_ends_on_the_report(page, agora, fake_llm):
    fake_llm.token_delay = 0.02
    pk = await start(page, agora, "念佛与参禅，哪条路更适合现代人修行？", rounds="2")
    await page.wait_for_selector("article.turn-running .text.live:not(:empty)", timeout=20000)
    observed = []
    await observe_stream(page, 0.6, observed)
    for _ in range(3):  # reload mid-stream, then keep watching
        await page.reload()
        await observe_stream(page, 0.6, observed)
    await shot(page, "live")
    await finished(page, timeout=60000)
    await shot(page, "report")
    data = await export(page, agora, pk)
    assert data["status"] == "done"
    assert_exactly_once(observed, data["turns"])
    keys = await page.eval_on_selector_all("article.turn", "els => els.map(e => e.dataset.key)")
    assert sorted(keys) == sorted(t["key"] for t in data["turns"]), "each turn shown exactly once"
    assert await page.locator("#debate-report").inner_text() != ""
    await page.click("text=Markdown")  # the export link works from the page
    md = await page.context.request.get(f"{agora.url}/debates/{pk}/export.md")
    named = md.headers["content-disposition"]
    assert re.match(r'attachment; filename=".+-duel-debate-\d{4}-\d{2}-\d{2}-\d+\.md"', named), named


@pytest.mark.parametrize("attempt", range(10))
async def test_reload_mid_stream_keeps_the_transcript_intact(page, agora, fake_llm, attempt):
    fake_llm.token_delay = 0.01
    pk = await start(page, agora, f"顿悟与渐修（第 {attempt} 次）", personas=("huineng", "zhiyi"), rounds="1")
    await page.wait_for_selector("article.turn-running .text.live:not(:empty)", timeout=20000)
    await page.wait_for_timeout(50 + 37 * attempt)  # a different moment each time
    await page.reload()
    observed = []
    await observe_stream(page, 0.4, observed)
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    data = await export(page, agora, pk)
    assert_exactly_once(observed, data["turns"])
    keys = await page.eval_on_selector_all("article.turn", "els => els.map(e => e.dataset.key)")
    assert len(keys) == len(set(keys)) == len(data["turns"])


async def test_roundtable_pauses_at_the_checkpoint_and_continues(page, agora, fake_llm):
    fake_llm.token_delay = 0.001
    pk = await start(
        page,
        agora,
        "我们要不要把客服系统换成大模型驱动的智能客服？",
        fmt="roundtable",
        personas=("devil-advocate", "optimist", "ai-product-manager", "llm-architect"),
    )
    await page.wait_for_selector("#checkpoint-form", timeout=30000)
    await shot(page, "checkpoint")
    await page.fill("#checkpoint-addition", "补充：客服团队有 12 人，年预算 50 万。")
    # The table changes too: the AI product manager leaves, a growth PM joins (the two stances,
    # the devil's advocate and the optimist, stay: a roundtable keeps 2–3).
    await page.uncheck('#checkpoint-table input[name="keep"][value="ai-product-manager"]')
    await page.click("#checkpoint-table summary")
    await page.check('#checkpoint-table input[name="add"][value="growth-pm"]')
    await page.click("#checkpoint-form button[type=submit]")
    await finished(page, timeout=60000)
    data = await export(page, agora, pk)
    assert data["status"] == "done"
    later = [t for t in data["turns"] if t["round"] >= 2]
    assert later and all("年预算 50 万" in json.dumps(t["messages"], ensure_ascii=False) for t in later)
    keys = {t["key"] for t in data["turns"]}
    assert "r1:growth-pm" in keys and "r1:ai-product-manager" in keys  # who left keeps its statement
    assert "r2:growth-pm" in keys and "r2:ai-product-manager" not in keys


async def test_a_roundtable_left_to_agora_shows_its_roles_before_it_runs(page, agora, fake_llm):
    """The seed's "system recommends, user confirms": nobody chosen, Start shows the picked roles
    checked (the mode the question's words chose), nothing runs until the second Start."""
    fake_llm.token_delay = 0.0
    await page.goto(f"{agora.url}/debates/new/?format=roundtable")
    await page.fill("#id_topic", "快速看看：我们的客服产品要不要引入 RAG 知识库？")
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#start-notice")
    assert page.url.endswith("/debates/new/")
    picked = await page.eval_on_selector_all("input[name=personas]:checked", "els => els.map(e => e.value)")
    assert len(picked) == 3  # quick, from the question's words
    await shot(page, "start")
    await page.uncheck(f"#persona-{picked[-1]}")
    await page.check("#persona-user-advocate")
    await page.click("button[type=submit].button")
    await page.wait_for_url(re.compile(r".*/debates/\d+/$"))
    pk = int(re.search(r"/debates/(\d+)/$", page.url).group(1))
    await page.wait_for_selector("#debate-report h2", timeout=60000)
    data = await export(page, agora, pk)
    speakers = {t["speaker"] for t in data["turns"] if t["key"].startswith("r1:")}
    assert speakers == {*picked[:-1], "user-advocate"}


@pytest.mark.parametrize(
    ("fmt", "topic", "personas", "mode"),
    [
        ("panel", "我们公司明年是否应该把核心交易系统迁到云上？", (), ""),
        (
            "moderated",
            "创业公司该不该追求完美的产品设计？",
            ("steve-jobs", "charlie-munger", "socrates"),
            "round-robin",
        ),
    ],
)
async def test_panel_and_moderated_run_to_their_reports(page, agora, fake_llm, fmt, topic, personas, mode):
    fake_llm.token_delay = 0.0
    pk = await start(page, agora, topic, fmt=fmt, personas=personas)
    await finished(page, timeout=60000)
    data = await export(page, agora, pk)
    assert data["status"] == "done" and data["report"]["verdict_markdown"]


async def test_form_errors_show_in_the_browser(page, agora):
    await page.goto(f"{agora.url}/debates/new/")
    await page.check("#persona-huineng")
    await page.click("button[type=submit].button")
    assert await page.locator("#field-topic .errorlist").count() == 1
    assert await page.locator("#field-personas .errorlist").count() == 1


async def test_the_admin_runs_under_the_content_security_policy(browser_page, agora):
    """Django's admin and our admin pages load and work with no inline script or style refused."""
    page = browser_page
    await log_in(page, agora, "root")
    for path in (
        "/admin/",
        "/admin/personas/persona/",
        "/admin/personas/persona/coverage/?a=huineng&b=yinguang",
        "/admin/personas/library/import/",
        "/admin/debates/provider/add/",
        "/admin/debates/debate/",
    ):
        response = await page.goto(agora.url + path)
        assert response.ok and "script-src 'self'" in response.headers["content-security-policy"], path
    await page.goto(agora.url + "/admin/personas/persona/")
    await page.click("#changelist-filter a >> nth=1")  # a filter link: the admin's own scripts ran
    assert "?" in page.url
