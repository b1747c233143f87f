from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, require_or_skip


@pytest.fixture
def user(alice):
    return alice


@pytest.fixture
def client(client, user):
    """The web tests act as a signed-in user: starting debates needs an account."""
    client.force_login(user)
    return client


@pytest.fixture
async def browser_page():
    require_or_skip(Path(CHROMIUM).exists(), f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1100, "height": 1000}, locale="zh-CN")
        page = await context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # Whatever the Content-Security-Policy refuses is a bug of ours (an inline script or style).
        page.on("console", lambda m: "Content Security Policy" in m.text and errors.append(m.text))
        yield page
        await browser.close()
        assert not errors, f"JavaScript errors or CSP violations on the page: {errors}"
