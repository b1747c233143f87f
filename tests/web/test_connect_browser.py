"""A newcomer connects a provider in the browser and debates on it, with no restart; the key is in
no page, no log line, no export, and not in clear in the database file (issue 27, acceptance).
The pages touched fit a phone and a desktop in both languages."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import stat
import subprocess
import sys

import pytest

from testkit.fake_openai import FakeOpenAIServer
from testkit.servers import ROOT, AgoraServer
from tests.web.browser import log_in, shot

pytestmark = pytest.mark.browser

KEY = "sk-browser-SECRET-a1b2c3d4e5f6a7b8"
NEEDLES = (KEY, KEY.removeprefix("sk-"), "SECRET-a1b2c3d4e5f6a7b8", "a1b2c3d4e5f6a7b8")


def leaks(texts: dict[str, str]) -> dict[str, list[str]]:
    return {where: found for where, text in texts.items() if (found := [n for n in NEEDLES if n in text])}


@pytest.fixture
def keyed():
    with FakeOpenAIServer(api_key=KEY, models=["fake-model", "fake-large"]) as server:
        yield server


@pytest.fixture
def server(tmp_path, template_db, fake_llm_server):
    # No AGORA_KEY_ENCRYPTION_KEY: the embedded set-up generates one beside the database.
    made = AgoraServer(
        tmp_path, fake_llm_server.base_url, template_db, LOG_LEVEL="DEBUG", AGORA_KEY_ENCRYPTION_KEY=""
    ).start()
    yield made
    made.stop()


async def test_connect_a_provider_and_debate_on_it_without_the_key_anywhere(chromium, server, keyed):
    page = await chromium.page(locale="en-US", width=1280)
    bodies: list = []
    page.on("response", lambda response: bodies.append(response))
    await log_in(page, server, "root")
    pid = server.process.pid

    await page.click("a.connect-link")  # from the home page
    await page.wait_for_url(f"{server.url}/connect/")
    await page.check("input[name=service][value=other]")
    await page.fill("#id_base_url", keyed.base_url)
    await page.fill("#id_api_key", "sk-wrong-0000000000000000")
    await page.click("#connect-form button[type=submit]")
    await page.wait_for_selector("#connect-form .errorlist")  # the test failed: said, not kept
    assert "refused the API key" in await page.inner_text("#connect-form")
    assert await page.input_value("#id_api_key") == ""
    await page.fill("#id_base_url", keyed.base_url)
    await page.fill("#id_api_key", KEY)
    await page.click("#connect-form button[type=submit]")
    await page.wait_for_url(re.compile(r".*/connect/\d+/$"))
    await shot(page, "connect-model-en-desktop")
    assert "key set, ends in …a7b8" in await page.inner_text("main")
    await page.select_option("#id_model", "fake-large")
    await page.click("#model-form button[type=submit]:not([name])")
    await page.wait_for_url(re.compile(r".*/debates/new/\?provider=\d+$"))
    provider_pk = page.url.rsplit("=", 1)[1]
    assert await page.input_value("#id_provider") == provider_pk  # chosen for the newcomer

    await page.fill("#id_topic", "念佛与参禅，哪条路更适合现代人修行？")
    await page.fill("#id_rounds", "1")
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#debate-status, #form-errors")
    errors = await page.locator(".errorlist").all_inner_texts()
    assert not await page.locator("#form-errors").count(), errors
    debate = int(re.search(r"/debates/(\d+)/$", page.url).group(1))
    await page.wait_for_selector('#debate-status[data-status="done"]', timeout=60_000)
    assert server.process.pid == pid and server.process.poll() is None  # no restart

    chats = keyed.chat_requests
    assert chats and all(r.status == 200 for r in chats), [r.status for r in chats]
    assert {r.bearer_sha256 for r in chats} == {hashlib.sha256(KEY.encode()).hexdigest()}
    assert {r.body["model"] for r in chats} == {"fake-large"}

    texts: dict[str, str] = {}
    for path in (
        "/",
        "/connect/",
        f"/connect/{provider_pk}/",
        "/debates/new/",
        f"/debates/{debate}/",
        f"/debates/{debate}/report/",
        f"/debates/{debate}/export.md",
        f"/debates/{debate}/export.json",
        "/admin/debates/provider/",
        f"/admin/debates/provider/{provider_pk}/change/",
        f"/admin/debates/debate/{debate}/change/",
        "/api/v1/debates/",
    ):
        response = await page.context.request.get(server.url + path)
        texts[path] = await response.text()
    for response in bodies:
        try:
            texts[f"browser {response.request.method} {response.url}"] = await response.text()
        except Exception:  # noqa: BLE001 - a redirect has no body to read
            continue
    await asyncio.sleep(0.5)  # the last writes reach the database file and the log
    texts["daphne log"] = server.log_path.read_text(errors="replace")
    for suffix in ("", "-wal"):
        db = server.db.with_name(server.db.name + suffix)
        if db.exists():
            texts[f"database file {db.name}"] = db.read_bytes().decode("latin-1")
    dump = subprocess.run(
        [sys.executable, "manage.py", "dumpdata"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{server.db}"},
        capture_output=True,
        text=True,
        check=True,
    )
    texts["dumpdata"] = dump.stdout
    assert not leaks(texts), leaks(texts)
    # The scan saw what it should: the sealed key in the dump, the debate's speeches in the export.
    assert '"api_key_sealed": "gAAAA' in dump.stdout
    assert "fake-large" in texts[f"/debates/{debate}/export.json"]
    assert "DEBUG" in texts["daphne log"]
    key_file = server.db.with_name(server.db.name + ".keys")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


PAGES = ("/", "/connect/", "/debates/new/", "/admin/debates/provider/add/")


@pytest.mark.parametrize("locale", ["zh-CN", "en-US"])
@pytest.mark.parametrize("width", [390, 1280])
async def test_the_pages_fit_in_both_languages(chromium, agora, locale, width):
    page = await chromium.page(locale=locale, width=width, height=900)
    await log_in(page, agora, "root")
    for path in (*PAGES, "/admin/personas/persona/1/change/"):
        if path.startswith("/admin/personas") and width < 1280:
            continue  # Django's own admin scrolls its forms on a phone; the issue is about 1280 px
        await page.goto(agora.url + path)
        name = path.strip("/").replace("/", "-") or "home"
        await shot(page, f"{name}-{locale}-{width}")
        over = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert over <= 0, f"{path} at {width} px ({locale}) scrolls sideways by {over} px"
    await page.goto(agora.url + "/connect/")
    assert await page.locator("input[name=service]").count() == 6
