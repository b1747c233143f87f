"""The start form, the home page, the login and setup pages and the error pages in real Chromium,
in English and Chinese, on a laptop (1280×800) and a phone (390×844): nothing wider than the
screen, the header's links on one line each, the format switch swapping the persona cards, the
question's counter counting, the home filters in the address.

Set AGORA_SHOTS=/some/folder to keep a full-page screenshot of each page at each size and language."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.servers import ROOT, AgoraServer
from tests.web.browser import choose_format, log_in, start

pytestmark = [pytest.mark.browser]

SHOTS = os.environ.get("AGORA_SHOTS")
SIZES = {"laptop": (1280, 800), "phone": (390, 844)}
LOCALES = {"en": "en-US", "zh": "zh-CN"}


@pytest.fixture(params=[(lang, size) for lang in LOCALES for size in SIZES], ids=lambda p: f"{p[0]}-{p[1]}")
def view(request):
    return request.param


async def open_page(chromium, view):
    lang, size = view
    width, height = SIZES[size]
    return await chromium.page(locale=LOCALES[lang], width=width, height=height)


async def check_fits(page, name: str, view) -> None:
    """No horizontal scrolling, the header's links each on one line; a screenshot if asked."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=f"{SHOTS}/{name}-{view[0]}-{view[1]}.png", full_page=True)
    widths = await page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"{name}: the page is {widths[0]}px wide on a {widths[1]}px screen"
    tall = await page.evaluate(
        """() => [...document.querySelectorAll('header.top nav > a, header.top nav .who, header.top button.link')]
              .filter(e => e.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(e).lineHeight || 20))
              .map(e => e.textContent.trim())"""
    )
    assert not tall, f"{name}: header items wrapped over several lines: {tall}"


async def test_start_form(chromium, agora, view):
    page = await open_page(chromium, view)
    await log_in(page, agora)
    await page.goto(f"{agora.url}/debates/new/")
    await check_fits(page, "start-duel", view)

    # The counter counts as one types (code points: an emoji is one).
    await page.fill("#id_topic", "念佛还是参禅？🙂")
    assert await page.text_content("#topic-counter") == "8 / 1000"
    assert not await page.locator("#topic-counter.over").count()

    # Another format: its own cards, modes and options replace the duel's; the address follows.
    duel_cards = await page.eval_on_selector_all(".card", "cs => cs.map(c => c.dataset.slug)")
    assert "huineng" in duel_cards and not await page.locator("#field-mode").count()
    await choose_format(page, "moderated")
    cards = await page.eval_on_selector_all(".card", "cs => cs.map(c => c.dataset.slug)")
    assert "socrates" in cards and "huineng" not in cards and "moderator" not in cards
    assert page.url.endswith("/debates/new/?format=moderated")
    assert await page.locator("input[name=mode]").count() == 3
    assert not await page.locator("#field-research_budget").count()

    # Sides appear for a chosen persona once the mode assigns sides.
    await page.check("#persona-socrates")
    sides = page.locator('.card[data-slug="socrates"] .sides')
    assert not await sides.is_visible()
    await page.check("input[name=mode][value=position-based]")
    assert await sides.is_visible()
    assert not await page.locator('.card[data-slug="confucius"] .sides').is_visible(), "not chosen: no sides"
    await page.check("input[name=position-socrates][value=for]")
    # The box says what the submit would: nobody chosen is no answer for a mode with sides.
    await page.wait_for_selector("#suggestion [data-refusal]")
    assert await page.locator(".sides-help").is_visible() and not await page.locator(".seat-help").is_visible()
    await check_fits(page, "start-moderated", view)

    await choose_format(page, "roundtable")
    assert await page.locator("#field-no_interrupt input[type=checkbox]").is_visible()
    assert not await page.locator("#id_rounds").count() and not await page.locator(".sides").count()
    await check_fits(page, "start-roundtable", view)

    await choose_format(page, "panel")
    assert await page.locator("#field-research_budget").is_visible()
    assert not await page.locator("#id_rounds").count()
    assert not await page.locator("#field-no_interrupt").count()
    await check_fits(page, "start-panel", view)

    # An over-long question: the counter turns red, the server says so beside the field, whole.
    await page.fill("#id_topic", "问" * 1001)
    assert await page.text_content("#topic-counter") == "1001 / 1000"
    assert await page.locator("#topic-counter.over").count() == 1
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#field-topic .errorlist")
    assert len(await page.input_value("#id_topic")) == 1001, "nothing was cut"
    assert await page.text_content("#topic-counter") == "1001 / 1000"
    await check_fits(page, "start-errors", view)


async def test_start_form_positions_reach_the_debate(chromium, agora):
    page = await chromium.page(locale="en-US", width=390, height=844)
    await log_in(page, agora)
    await page.goto(f"{agora.url}/debates/new/")
    await page.fill("#id_topic", "Should every definition be questioned?")
    await choose_format(page, "moderated")
    await page.check("input[name=mode][value=position-based]")
    for slug, side in (("socrates", "for"), ("confucius", "against")):
        await page.check(f"#persona-{slug}")
        await page.check(f"input[name=position-{slug}][value={side}]")
    async with page.expect_navigation():
        await page.click("button[type=submit].button")
    assert "/debates/new/" not in page.url, await page.locator(".errorlist").all_inner_texts()
    pk = int(page.url.rstrip("/").rsplit("/", 1)[1])
    data = await (await page.context.request.get(f"{agora.url}/debates/{pk}/export.json")).json()
    assert {s["persona"]: s["position"] for s in data["seats"]} == {"socrates": "for", "confucius": "against"}


LONG_QUESTION = "念佛与参禅，哪条路更适合在城市里上班、每天只有半小时空闲的现代人修行？" * 2


async def test_home(chromium, agora, fake_llm, view):
    fake_llm.token_delay = 0.0
    page = await open_page(chromium, view)
    await log_in(page, agora, "bob")
    await page.goto(f"{agora.url}/")
    if not await page.locator("table.history").count():  # bob's first visit: one debate, a long question
        assert await page.locator('[data-empty="none"]').count() == 1
        await check_fits(page, "home-empty", view)
        await start(page, agora, LONG_QUESTION, personas=("huineng", "yinguang"), rounds="1")
    await page.goto(f"{agora.url}/")
    assert await page.locator("table.history tbody tr").count() >= 1
    await check_fits(page, "home", view)
    # Filters go into the address as one types; a reload keeps them.
    await page.fill("input[name=q]", "no such question anywhere")
    await page.wait_for_url("**/?q=no+such+question+anywhere")
    await page.wait_for_selector('[data-empty="filtered"]')
    await page.select_option("select[name=status]", "done")
    await page.wait_for_url("**/?q=no+such+question+anywhere&status=done")
    await page.reload()
    assert await page.input_value("input[name=q]") == "no such question anywhere"
    assert await page.input_value("select[name=status]") == "done"
    await check_fits(page, "home-filtered", view)


async def test_an_invitation_and_the_people_at_the_table(chromium, agora, fake_llm, view):
    """Alice invites bob: her page lists him, his home page shows the invitation; he accepts, then
    leaves (the seat goes on without him, so the debate ends and frees alice's running slot)."""
    fake_llm.token_delay = 0.0
    owner = await open_page(chromium, view)
    await log_in(owner, agora, "alice")
    invite = {"input[name=invite-yinguang]": "bob"}
    pk = await start(owner, agora, LONG_QUESTION, personas=("huineng", "yinguang"), rounds="1", extra=invite)
    await owner.wait_for_selector("#people [data-invitation=pending]")
    await check_fits(owner, "people-owner", view)

    guest = await open_page(chromium, view)
    await log_in(guest, agora, "bob")
    invitation = guest.locator(f"#invitations form[action='/seats/{await _seat(owner)}/invitation/']")
    await check_fits(guest, "home-invitation", view)
    async with guest.expect_navigation():
        await invitation.locator("button[value=accept]").click()
    assert guest.url == f"{agora.url}/debates/{pk}/"
    await check_fits(guest, "people-seated", view)
    async with guest.expect_navigation():
        await guest.click("#people form[action$='/leave/'] button")
    assert guest.url == f"{agora.url}/"
    assert not await guest.locator(f"table.history a[href='/debates/{pk}/']").count()


async def _seat(page) -> str:
    return (await page.get_attribute("#people li[data-invitation]", "id")).removeprefix("seat-")


async def test_login_and_error_pages(chromium, agora, view):
    page = await open_page(chromium, view)
    await page.goto(f"{agora.url}/accounts/login/")
    await check_fits(page, "login", view)
    response = await page.goto(f"{agora.url}/debates/999999/?share=revoked-or-never-was")
    assert response.status == 404
    assert await page.locator('[data-error="404"]').count() == 1
    await check_fits(page, "error-404", view)
    await page.click('[data-error="404"] a.button')
    await page.wait_for_url(f"{agora.url}/")


@pytest.fixture(scope="module")
def fresh_agora(tmp_path_factory, template_db, fake_llm_server):
    """A server with no account yet and a setup link, as a first start leaves it."""
    server = AgoraServer(tmp_path_factory.mktemp("fresh"), fake_llm_server.base_url, template_db)
    script = (
        "from django.contrib.auth.models import User\nfrom agora.models import SetupToken\n"
        "User.objects.all().delete()\nprint(SetupToken.issue())"
    )
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env={**server.env},
        capture_output=True,
        text=True,
        check=True,
    )
    server.setup_token = made.stdout.strip().splitlines()[-1]
    server.start()
    yield server
    server.stop()


async def test_setup_page(chromium, fresh_agora, view):
    page = await open_page(chromium, view)
    await page.goto(f"{fresh_agora.url}/setup/#{fresh_agora.setup_token}")
    assert await page.locator("#id_password1").count() == 1
    await check_fits(page, "setup", view)
