"""Helpers for the Chromium tests (Debian's chromium driven by Playwright's async API)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from testkit.servers import USERS

SHOTS = os.environ.get("AGORA_SCREENSHOTS")


async def log_in(page, agora, name: str = "alice") -> None:
    await page.goto(f"{agora.url}/accounts/login/")
    await page.fill("#id_username", name)
    await page.fill("#id_password", USERS[name])
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{agora.url}/")


async def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=f"{SHOTS}/{name}.png", full_page=name.endswith("report"))


async def finished(page, timeout: int = 60000) -> None:
    """The report is on the page and the debate's status is done. The report's frame comes first
    and the status after it: an export read between the two still says running."""
    await page.wait_for_selector("#debate-report h2", timeout=timeout)
    await page.wait_for_selector('#debate-status[data-status="done"]', timeout=timeout)


async def export(page, agora, pk: int) -> dict:
    """The debate as JSON, fetched with the signed-in browser's cookies."""
    response = await page.context.request.get(f"{agora.url}/debates/{pk}/export.json")
    assert response.ok, response.status
    return await response.json()


async def choose_format(page, fmt: str) -> None:
    """Pick a format and wait for htmx to swap in its part (its persona cards and options)."""
    if await page.locator(f'#format-part[data-format="{fmt}"]').count():
        return
    await page.select_option("#id_format", fmt)
    await page.wait_for_selector(f'#format-part[data-format="{fmt}"]')


async def start(page, agora, topic: str, fmt: str = "duel", personas=(), rounds: str = "", extra=None) -> int:
    await page.goto(f"{agora.url}/debates/new/")
    await page.fill("#id_topic", topic)
    await choose_format(page, fmt)
    for slug in personas:
        await page.check(f"#persona-{slug}")
    if rounds:
        await page.fill("#id_rounds", rounds)
    for selector, value in (extra or {}).items():
        await page.fill(selector, value)
    await page.click("button[type=submit].button")
    await page.wait_for_url(re.compile(r".*/debates/\d+/$"))
    return int(re.search(r"/debates/(\d+)/$", page.url).group(1))


async def live_texts(page) -> dict[str, str]:
    """The text of every turn still streaming, by turn key."""
    return await page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('article.turn-running')]
              .map(a => [a.dataset.key, a.querySelector('.text.live').textContent]))"""
    )


async def observe_stream(page, seconds: float, observed: list) -> None:
    for _ in range(int(seconds / 0.05)):
        for key, text in (await live_texts(page)).items():
            observed.append((key, text))
        await page.wait_for_timeout(50)


def assert_exactly_once(observed, final_turns):
    texts = {t["key"]: t["text"] for t in final_turns}
    assert observed, "nothing was seen streaming"
    for key, shown in observed:
        assert texts[key].startswith(shown), f"{key}: the page showed {shown!r}, not a prefix of the final text"
