"""The replay of a finished duel in real Chromium (on the fake server, with a known delay between
tokens): every character of every turn shown once and in order, at the pace the server sent it
(within 10%, at 1× and at 5×), a `?t=` link starting where it says, in both languages, on a desktop
and on a phone, with no critical or serious accessibility finding."""

from __future__ import annotations

import json

import pytest

from tests.web.browser import export, shot, start
from tests.web.test_stage import DUEL, PHONE, audit, overflow, signed_in, until

pytestmark = [pytest.mark.browser]

# Runs before the page's own script: every text node added to a turn's streaming text, with the
# time it was added (performance.now(), ms), by turn key; and the most text nodes a turn's streaming
# text held once a frame was drawn (the page merges them: one node, not one per frame).
RECORD = """
window.__appended = [];
window.__nodes = 0;
new MutationObserver(records => {
  const now = performance.now();
  for (const r of records) {
    const live = r.target.closest && r.target.closest('[data-live]');
    if (!live) continue;
    window.__nodes = Math.max(window.__nodes, live.childNodes.length);
    for (const node of r.addedNodes) {
      if (node.nodeType === 3) window.__appended.push([live.closest('article').dataset.key, node.data, now]);
    }
  }
}).observe(document, {childList: true, subtree: true});
"""


async def play_through(page, url: str, speed: str) -> list:
    """Open the replay, set its speed, and let it play to the end; the text nodes it added."""
    await page.goto(url)
    if speed != "1":
        # Back to the start at the new speed, in one step of the page's own thread (what played
        # before the change is not measured).
        await page.evaluate(
            """speed => { const select = document.getElementById('replay-speed');
                 select.value = speed; select.dispatchEvent(new Event('change'));
                 const seek = document.getElementById('replay-seek');
                 seek.value = '0'; seek.dispatchEvent(new Event('input')); window.__appended = [];
                 window.__nodes = 0; }""",
            speed,
        )
    await until(page, "!document.getElementById('replay-end').hidden", timeout=90)
    return await page.evaluate("window.__appended")


def spans(appended: list) -> dict[str, tuple[str, float]]:
    """Per turn: its streamed text (the added nodes in order) and the time from its first to its
    last character (s)."""
    out: dict[str, list] = {}
    for key, text, at in appended:
        seen = out.setdefault(key, ["", at, at])
        seen[0] += text
        seen[2] = at
    return {key: (text, (last - first) / 1000) for key, (text, first, last) in out.items()}


async def test_a_finished_duel_replays_every_character_once_at_its_pace(chromium, agora, fake_llm):
    fake_llm.token_delay = 0.02
    # Turns of about 2.5 s each (130 characters, a token each): long enough that a frame (16 ms at
    # each end of a turn) is small beside 10% of a turn even at 5×.
    fake_llm.enqueue(*(f"第{n}段：" + "心安即是归处，念念分明。" * 10 for n in range(1, 7)))
    page = await signed_in(chromium, agora, "en-US")
    pk = await start(page, agora, DUEL, rounds="1")
    await page.wait_for_selector("#debate-report h2", timeout=90000)
    await page.click("#debate-report a.replay-link")
    await page.wait_for_url(f"**/debates/{pk}/replay/")
    stored = {t["key"]: t["text"] for t in (await export(page, agora, pk))["turns"]}
    # What the server sent for each turn, and for how long it sent it (s): the truth to compare with.
    sent = {}
    for request in fake_llm.chat_requests:
        for key, text in stored.items():
            if text and request.tokens and request.text.strip() == text.strip():
                sent[key] = request.token_times[-1] - request.token_times[0]
    assert len(sent) >= 3 and sum(sent.values()) > 6, (sent, sorted(stored))

    await page.add_init_script(RECORD)
    replay = f"{agora.url}/debates/{pk}/replay/"
    for speed in ("1", "5"):
        played = spans(await play_through(page, replay, speed))
        # Every character once, in order: what was added to each turn, in order, is its stored text.
        assert {key: text for key, (text, _) in played.items()} == {k: t for k, t in stored.items() if t}, speed
        assert await page.evaluate("window.__nodes") == 1, speed
        # The pace: each turn's characters take, from its first to its last, the time the server
        # took to send them (divided by the speed). Summed over the turns, so that a frame's
        # granularity (16 ms at each end of each turn) stays well within the 10%.
        measured = sum(played[key][1] for key in sent)
        recorded = sum(sent.values()) / int(speed)
        print(f"replay at {speed}x: {measured:.3f} s played for {recorded:.3f} s recorded")
        assert abs(measured - recorded) <= 0.1 * recorded, (speed, measured, recorded)
        # The turns' finished forms replaced their streaming text, as on the live page.
        assert await page.locator("article .replay-final").count() == len(played)
    problems = {"replay, ended (en, desktop)": await audit(page)}
    await shot(page, "replay")

    # A link at a moment: the second turn's start (plus a little) opens there, in Chinese, on a phone.
    data = json.loads(await page.inner_text("#replay-data"))
    first, second = data["turns"][0], next(t for t in data["turns"][1:] if t["at"] > data["turns"][0]["end"])
    seconds = (second["at"] + 300) / 1000
    phone = await signed_in(chromium, agora, "zh-CN", PHONE)
    await phone.goto(f"{replay}?t={seconds}")
    position = int(await phone.get_attribute("#replay", "data-position"))
    assert second["at"] + 300 <= position < second["at"] + 300 + 2000, position
    assert await phone.locator(f"#replay-turn-{first['id']} .replay-final").is_visible(), "the turn before is whole"
    assert await phone.locator(f"#replay-turn-{second['id']}").is_visible()
    later = [t for t in data["turns"] if t["at"] > position + 4000]
    if later:
        assert await phone.locator(f"#replay-turn-{later[-1]['id']}").is_hidden(), "what comes later is not shown"
    await phone.click("#replay-play")  # pause
    assert await phone.get_attribute("#replay-play", "aria-pressed") == "false"
    held = await phone.get_attribute("#replay", "data-position")
    await phone.wait_for_timeout(400)
    assert await phone.get_attribute("#replay", "data-position") == held, "paused"
    assert f"t={int(held) / 1000:.1f}".removesuffix(".0") in phone.url
    assert "第 1 轮" in await phone.inner_text(".replay-rounds")  # the page in the reader's language
    assert await phone.get_attribute("html", "lang") == "zh-hans"
    assert await overflow(phone) <= 0, "nothing wider than the phone"
    problems["replay, paused (zh, phone)"] = await audit(phone)
    await shot(phone, "replay-phone-zh")

    # The round scrubber: round 1's mark jumps to round 1's first turn.
    await phone.click(".replay-rounds a")
    round_one = next(t for t in data["turns"] if t["round"] == 1)
    assert int(await phone.get_attribute("#replay", "data-position")) == round_one["at"]
    assert not any(problems.values()), json.dumps(problems, ensure_ascii=False, indent=1)
