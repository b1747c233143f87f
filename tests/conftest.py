"""Fixtures shared by the suite: the fake OpenAI server and a real Agora server around it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_asyncio
from django.core.management import call_command
from django.test import override_settings
from django.utils import translation

from testkit.chromium import CHROMIUM, CHROMIUM_ARGS
from testkit.fake_openai import FakeOpenAIServer
from testkit.servers import AgoraServer, prepare_database, require_or_skip  # noqa: F401 - re-exported

# The bundled model runs on one llama.cpp thread here: the suite's workers share two cores,
# and llama.cpp's threads spin at every step's barrier, so a thread on a core the other worker is
# using stalls them all (the real-model duel: 51 s alone, 161 s in the suite; beside a one-core
# load, 116 s with two threads and 78 s with one). `make run` keeps the default (every core).
os.environ.setdefault("AGORA_LOCAL_THREADS", "1")

# `make test-fast` leaves out what starts real processes (daphne, workers, Chromium, the real
# model) or walks a large corpus; everything else runs in under a minute.
SLOW_MODULES = {
    "test_hostile_input.py",
    "test_manifest_properties.py",
    "test_cli.py",
    "test_crash_resume.py",
    "test_scale_out.py",
}


def pytest_collection_modifyitems(items):
    for item in items:
        real_processes = {"template_db", "agora", "browser_page"} & set(item.fixturenames)
        if item.path.name in SLOW_MODULES or real_processes or item.get_closest_marker("localmodel"):
            item.add_marker(pytest.mark.slow)
            # A test of real processes waits on real time (a frame within 10 s, a page within 60),
            # and on CI's two busy cores a wait now and then runs late. Such a test runs once more
            # when it fails, and the run lists it as rerun ("R" in the summary): a failure that
            # repeats still fails the suite, and a listed rerun is a timing to fix, not a pass to
            # forget. The real model's tests (minutes each) are not run twice.
            if not item.get_closest_marker("localmodel") and not item.get_closest_marker("flaky"):
                item.add_marker(pytest.mark.flaky(reruns=1))
        if "chromium" in item.fixturenames:  # the loop the worker's browser lives on (see below)
            item.add_marker(pytest.mark.asyncio(loop_scope="session"), append=False)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """The test database is a file, as the app's is, not SQLite's in-memory default. In memory,
    every connection shares one cache with table locks: a background thread's write that meets
    the test's read fails at once with "database table is locked" (no busy wait, no WAL), which
    the app never meets. A comparison written while its test polled died that way on CI."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and not database.get("TEST", {}).get("NAME"):
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.getbasetemp() / "test.sqlite3")


@pytest.fixture(scope="session")
def template_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("template-db") / "template.sqlite3"
    prepare_database(path, dict(os.environ))
    return path


@pytest.fixture(scope="module")
def fake_llm_server():
    with FakeOpenAIServer(token_delay=0.005) as server:
        yield server


@pytest.fixture
def fake_llm(fake_llm_server):
    """The module's fake server, reset to defaults for each test."""
    fake_llm_server.reset()
    fake_llm_server.script = None
    fake_llm_server.token_delay = 0.005
    yield fake_llm_server
    fake_llm_server.reset()


@pytest.fixture(scope="module")
def agora(tmp_path_factory, template_db, fake_llm_server):
    server = AgoraServer(tmp_path_factory.mktemp("agora"), fake_llm_server.base_url, template_db).start()
    yield server
    server.stop()


# -- people and libraries (one definition for every suite) -----------------------------------------


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """Creating users is the slow part of many tests: hash their passwords cheaply."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def site_language():
    """Each test starts in the site's language, as a fresh process does. A request through Django's
    test client leaves its Accept-Language active on the thread, and code outside a request (the
    CLI's create_debate, the engine's texts) reads the active language: without this, a test's
    result depended on which test its worker ran before it."""
    translation.deactivate()


@pytest.fixture
def libraries(db):
    call_command("load_libraries", verbosity=0)


@pytest.fixture
def no_runs(monkeypatch):
    """Debates are admitted but not run: the ids dispatched, in order."""
    started = []
    monkeypatch.setattr("debates.control.dispatch", started.append)
    return started


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def staff(django_user_model):
    """Staff (may open the admin) without any permission."""
    return django_user_model.objects.create_user("staff", password="pw-staff-123", is_staff=True)


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")


# Small numbers keep fault tests fast: a hang fails after PROVIDER_TIMEOUT s per attempt, retries
# back off from 10 ms (Retry-After from the server still wins over the backoff).
PROVIDER_TIMEOUT = 0.4
PROVIDER_RETRIES = 2
PROVIDER_BACKOFF = 0.01


@pytest.fixture
def fast_llm(fake_llm):
    """The fake server, with the default provider pointed at it and short timeouts/backoff."""
    fake_llm.token_delay = 0.0
    with override_settings(
        OPENAI_BASE_URL=fake_llm.base_url,
        AGORA_MODEL="fake-model",
        AGORA_PROVIDER_TIMEOUT=PROVIDER_TIMEOUT,
        AGORA_PROVIDER_RETRIES=PROVIDER_RETRIES,
        AGORA_PROVIDER_BACKOFF=PROVIDER_BACKOFF,
    ):
        yield fake_llm


@pytest.fixture
def remote_default(settings):
    """The default model is a remote one (nothing listens: no call is made), so the formats keep
    their own defaults; with OPENAI_BASE_URL empty the start form sizes them for the bundled model
    (`Format.local`, tests/web/test_bundled_sizing.py)."""
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"


# -- Chromium ---------------------------------------------------------------------------------------


class Chromium:
    """Pages in the worker's headless Chromium (Debian's, driven by Playwright's async API), each
    in a context of its own that closes with the test. A JavaScript error or anything the
    Content-Security-Policy refuses (an inline script or style of ours) fails the test that opened
    the page."""

    def __init__(self, browser) -> None:
        self.browser = browser
        self.errors: list[str] = []
        self.contexts: list = []

    async def page(self, *, locale: str = "zh-CN", width: int = 1100, height: int = 1000):
        context = await self.browser.new_context(viewport={"width": width, "height": height}, locale=locale)
        self.contexts.append(context)
        page = await context.new_page()
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: {error}"))
        page.on(
            "console", lambda m: "Content Security Policy" in m.text and self.errors.append(f"{page.url}: {m.text}")
        )
        return page

    async def close(self) -> None:
        for context in self.contexts:
            await context.close()


# One Playwright driver and one Chromium per test process, not per test: starting both took about
# a second of CPU each time, a tenth of the browser tests' share of the suite. The browser's tests
# therefore run on the session's event loop (pytest_collection_modifyitems marks them), the loop
# these objects belong to; each test still gets fresh contexts (cookies, storage, viewport).
@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium_browser():
    require_or_skip(Path(CHROMIUM).exists(), f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        await browser.close()


@pytest_asyncio.fixture(loop_scope="session")
async def chromium(chromium_browser):
    made = Chromium(chromium_browser)
    yield made
    await made.close()
    assert not made.errors, f"JavaScript errors or CSP violations on the page: {made.errors}"


@pytest_asyncio.fixture(loop_scope="session")
async def browser_page(chromium):
    return await chromium.page()
