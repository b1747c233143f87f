"""Issue 48 (High), in Chromium: on a fresh clone (the bundled model is the environment's), the owner
connects a server on /connect/, then Home → Start a debate → Start with the defaults runs on that
server, and the banners name it, in both languages; the start page fits a phone and a desktop with
no serious axe-core problem."""

from __future__ import annotations

import re

import pytest

from testkit.fake_openai import FakeOpenAIServer
from testkit.servers import AgoraServer
from tests.web.browser import log_in, shot
from tests.web.test_stage import DESKTOP, PHONE, audit

pytestmark = pytest.mark.browser

KEY = "sk-browser-default-0a1b2c3d4e5f6a7b"
QUESTION = "念佛与参禅，哪条路更适合现代人修行？"


@pytest.fixture(scope="module")
def connected_server():
    with FakeOpenAIServer(api_key=KEY, models=["fake-chat", "fake-large"]) as server:
        yield server


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory, template_db):
    """No OPENAI_BASE_URL: new debates run on the bundled model until one is connected."""
    server = AgoraServer(tmp_path_factory.mktemp("fresh"), "", template_db).start()
    yield server
    server.stop()


@pytest.mark.parametrize("locale", ["zh-CN", "en-US"])
async def test_connect_then_start_from_home_runs_on_the_connected_server(
    chromium, fresh_clone, connected_server, locale
):
    page = await chromium.page(locale=locale, width=DESKTOP[0], height=DESKTOP[1])
    await log_in(page, fresh_clone, "root")
    await page.goto(f"{fresh_clone.url}/connect/")
    await page.check("input[name=service][value=other]")
    await page.fill("#id_base_url", connected_server.base_url)
    await page.fill("#id_api_key", KEY)
    await page.click("#connect-form button[type=submit]")
    await page.wait_for_url(re.compile(r".*/connect/\d+/$"))
    provider = page.url.rstrip("/").rsplit("/", 1)[1]
    await page.select_option("#id_model", "fake-large")
    await page.click("#model-form button[type=submit]:not([name])")
    await page.wait_for_url(re.compile(r".*/debates/new/\?provider=\d+$"))

    await page.goto(f"{fresh_clone.url}/")  # later: Home → Start a debate, no ?provider=
    assert "fake-large" in await page.inner_text("#model-note")
    await shot(page, f"connected-home-{locale}-{DESKTOP[0]}")
    await page.click("main a.button[href='/debates/new/']")
    await page.wait_for_url(f"{fresh_clone.url}/debates/new/")
    assert await page.input_value("#id_provider") == provider
    note = await page.inner_text("#model-note")
    assert "fake-large" in note and "Qwen2.5-Coder" not in note, note
    problems = {}
    for width, height in (DESKTOP, PHONE):
        await page.set_viewport_size({"width": width, "height": height})
        await shot(page, f"connected-start-{locale}-{width}")
        problems[width] = await audit(page)
        over = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert over <= 0, f"the start page at {width} px scrolls sideways by {over} px"
    assert not any(problems.values()), problems
    await page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})

    before = len(connected_server.chat_requests)
    await page.fill("#id_topic", QUESTION)
    await page.fill("#id_rounds", "1")
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#debate-status, #form-errors")
    assert not await page.locator("#form-errors").count(), await page.locator(".errorlist").all_inner_texts()
    await page.wait_for_selector('#debate-status[data-status="done"]', timeout=60_000)
    chats = connected_server.chat_requests[before:]
    assert chats and {r.body["model"] for r in chats} == {"fake-large"}
