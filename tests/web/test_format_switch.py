"""The start form's defaults and an ordinary question (#48): the form opens on the duel, and the
first thing a newcomer types ("Should I take a job at a big tech company or join a five-person
startup?") was refused, since no pairing rule matches it. Where a format cannot take the question
with nobody chosen, the box offers the formats that can, one click each, and the click starts the
debate with the question and everything typed kept."""

from __future__ import annotations

import re
from html import unescape

import pytest

from debates.engine import registry
from debates.models import Debate
from tests.web.browser import log_in, shot
from tests.web.formpage import errors_in
from tests.web.test_stage import audit

# The Django test client's tests: the bundled libraries loaded, debates admitted but not run.
on_the_form = pytest.mark.usefixtures("db", "libraries", "no_runs", "remote_default")

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ORDINARY = "Should I take a job at a big tech company or join a five-person startup?"
CONTEXT = "I am 29, two years into my first job."


def default_format(client) -> str:
    html = client.get("/debates/new/", **EN).content.decode()
    select = re.search(r'<select name="format".*?</select>', html, re.S).group(0)
    return re.search(r'<option value="([^"]+)" selected>', select).group(1)


def offered(html: str) -> list[str]:
    return re.findall(r'<button type="submit" name="switch_format" value="([^"]+)"', html)


@on_the_form
def test_the_defaults_and_an_ordinary_question_start_a_debate_in_one_click(client, no_runs):
    fmt = default_format(client)
    typed = {"topic": ORDINARY, "format": fmt, "part_format": fmt, "user_context": CONTEXT, "rounds": "3"}
    response = client.post("/debates/new/", typed, **EN)
    html = response.content.decode()
    assert response.status_code == 200 and not Debate.objects.exists()
    assert "No pairing rule" in errors_in(html, "field-personas"), "the duel cannot pair it: the finding"

    switches = offered(html)
    assert switches, "no format offered to take the question"
    for other in switches:
        assert other != fmt and not registry.get(other).confirms_choice  # one click starts it
        response = client.post("/debates/new/", {**typed, "switch_format": other}, **EN)
        assert response.status_code == 302, errors_in(response.content.decode(), "form-errors")
        debate = Debate.objects.get()
        assert (debate.format, debate.question) == (other, ORDINARY)
        assert debate.options["user_context"] == CONTEXT, "what was typed is kept"
        # The duel's rounds go where the format takes rounds, and are dropped where it sets its own.
        assert debate.options.get("rounds") == (3 if "rounds" in registry.get(other).options() else None)
        assert no_runs[-1] == debate.pk
        Debate.objects.all().delete()  # within the running limit


@on_the_form
def test_the_box_offers_the_switch_as_the_question_is_typed(client):
    fmt = default_format(client)
    box = client.get("/debates/suggest/", {"topic": ORDINARY, "format": fmt}, **EN).content.decode()
    assert "data-refusal" in box and offered(box)
    labels = [unescape(label).strip() for label in re.findall(r'name="switch_format"[^>]*>(.*?)</button>', box)]
    names = {unescape(registry.get(name).label) for name in offered(box)}
    assert all(any(name in label for name in names) for label in labels), labels


@on_the_form
def test_a_question_the_format_takes_offers_no_switch(client):
    box = client.get("/debates/suggest/", {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}, **EN)
    assert "data-refusal" not in box.content.decode() and not offered(box.content.decode())


@on_the_form
def test_a_switch_to_an_unknown_or_confirming_format_starts_nothing(client, no_runs):
    typed = {"topic": ORDINARY, "format": "duel", "part_format": "duel"}
    for other in ("nonsense", "roundtable"):
        response = client.post("/debates/new/", {**typed, "switch_format": other}, **EN)
        assert response.status_code == 200 and not Debate.objects.exists() and not no_runs


# -- in Chromium ---------------------------------------------------------------------------------------

DESKTOP, PHONE = (1280, 800), (390, 844)
ORDINARY_ZH = "我该去大厂上班，还是加入一家五个人的创业公司？"


@pytest.mark.browser
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
async def test_the_switch_in_chromium_starts_the_question_it_kept(chromium, agora, locale, size):
    page = await chromium.page(locale=locale, width=size[0], height=size[1])
    await log_in(page, agora)
    await page.goto(f"{agora.url}/debates/new/")
    await page.fill("#id_topic", ORDINARY if locale == "en-US" else ORDINARY_ZH)
    button = page.locator("#suggestion button[name=switch_format]").first
    await button.wait_for()  # the box follows the typing (htmx)
    assert not await audit(page), "axe-core: nothing critical or serious with the switch shown"
    await shot(page, f"start-switch-{'phone' if size == PHONE else 'desktop'}-{locale[:2]}")
    await button.click()
    await page.wait_for_url(re.compile(r".*/debates/\d+/$"))
