"""The API tokens page in Chromium, both languages, desktop and phone: a new token and the three
doors it opens (the JSON API, chat clients, MCP) with this server's addresses, nothing wider than a
phone, and no serious accessibility finding."""

from __future__ import annotations

import pytest

from tests.web.browser import shot
from tests.web.test_stage import DESKTOP, PHONE, audit, overflow, signed_in

pytestmark = [pytest.mark.browser]


@pytest.mark.parametrize(("locale", "size"), [("en-US", DESKTOP), ("zh-CN", PHONE)])
async def test_the_tokens_page_shows_where_a_new_token_works(chromium, agora, locale, size):
    page = await signed_in(chromium, agora, locale, size)
    await page.goto(f"{agora.url}/accounts/tokens/")
    await page.fill("#id_name", "Open WebUI")
    await page.click(".token-form button")
    await page.wait_for_selector("[data-new-token]")
    doors = await page.inner_text(".token-doors")
    for address in (f"{agora.url}/api/v1/", f"{agora.url}/openai/v1", f"{agora.url}/mcp/"):
        assert address in doors, doors
    assert ("Chat clients" in doors) == (locale == "en-US") and ("聊天客户端" in doors) == (locale == "zh-CN")
    assert await overflow(page) <= 0
    assert await audit(page) == []
    await shot(page, f"tokens-{locale[:2]}")
