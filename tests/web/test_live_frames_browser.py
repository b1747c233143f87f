"""The live page's work per frame (issue 31.1), in real Chromium on a real Agora server: the token
meter rides on at most four text frames a second (of up to 25: debates/sink.py's METER_INTERVAL),
so the page redraws it no more often, and it still ends on the latest figures; the page's title is
written only when it changes; a text frame costs one pass over the styles, and a streaming speech
stays one text node.
(The page's CPU per token is measured, not tested: bench/browser.py.)"""

from __future__ import annotations

import pytest

from tests.web.browser import start
from tests.web.test_stage import DUEL, signed_in

pytestmark = [pytest.mark.browser]

# Counts, from before the page's own scripts, every time the meter element is swapped in and
# every text frame (a delta appended to a running turn), and every write of the title.
COUNT = r"""
(() => {
  const seen = window.__counts = { meters: 0, deltas: 0, titles: 0 };
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.target.id && /^turn-\d+-text$/.test(r.target.id) && !r.removedNodes.length) seen.deltas++;
      for (const n of r.addedNodes) if (n.id === "debate-meter") seen.meters++;
      if (r.target.nodeName === "TITLE") seen.titles++;
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""


async def test_the_meter_is_redrawn_a_few_times_a_second_and_ends_on_the_latest_figures(chromium, agora, fake_llm):
    fake_llm.token_delay = 0.02  # a frame every 40 ms: 25 meters a second arrive
    page = await signed_in(chromium, agora, "en-US")
    await page.add_init_script(COUNT)
    pk = await start(page, agora, DUEL, rounds="1")
    await page.wait_for_selector("article.turn-running .text.live:not(:empty)", timeout=20000)
    before = await page.evaluate("({...window.__counts, t: performance.now()})")
    await page.wait_for_timeout(2500)
    after = await page.evaluate("({...window.__counts, t: performance.now()})")
    seconds = (after["t"] - before["t"]) / 1000
    deltas, meters = after["deltas"] - before["deltas"], after["meters"] - before["meters"]
    titles = after["titles"] - before["titles"]
    assert deltas >= 2 * meters, (deltas, meters)  # the frames came; the meter did not follow each
    assert meters <= 4 * seconds + 2, (meters, seconds)
    assert titles <= 3, titles  # the title changes with the stage (a turn's start or end), not per frame
    await page.wait_for_selector("#debate-report h2", timeout=90000)
    await page.wait_for_timeout(400)  # a meter that waited is drawn within 250 ms
    shown = await page.text_content("#debate-meter strong")
    response = await page.context.request.get(f"{agora.url}/debates/{pk}/")
    assert f"<strong>{shown}</strong>" in await response.text(), shown  # the server's final figure


async def test_a_text_frame_costs_the_page_one_style_pass(chromium, agora, fake_llm):
    """Every write after the frame pass has read the layout (or a read before the frame's messages,
    once a timer changed the page) makes Chromium work out the styles again in the same frame: the
    page did it 2.7 times per text frame (style 0.46–0.50 of 3.4–3.7 ms of main thread per token,
    bench/browser.py; 0.25 ms after)."""
    fake_llm.token_delay = 0.03
    page = await signed_in(chromium, agora, "en-US")
    await page.add_init_script(COUNT)
    await start(page, agora, DUEL, rounds="1")
    await page.wait_for_selector("article.turn-running .text.live:not(:empty)", timeout=20000)
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("Performance.enable")

    async def counts() -> tuple[float, float]:
        metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
        return metrics["RecalcStyleCount"], await page.evaluate("window.__counts.deltas")

    styles_before, deltas_before = await counts()
    await page.wait_for_timeout(3000)
    styles_after, deltas_after = await counts()
    styles, deltas = styles_after - styles_before, deltas_after - deltas_before
    assert deltas >= 30, deltas  # the text streamed meanwhile
    # One pass per text frame, plus the meter's (four a second) and the clock's: 1.26 per frame here,
    # 3.3 before.
    assert styles <= 2 * deltas, (styles, deltas)


async def test_a_streaming_speech_stays_one_text_node_and_reads_as_the_server_wrote_it(chromium, agora, fake_llm):
    """Each frame appends its text as a node of its own; the page merges them as they come, or the
    layout of a speech grew with every frame (0.61 → 0.47 ms of layout per token, bench/browser.py).
    The merged text is still exactly what the server stored."""
    fake_llm.token_delay = 0.03
    page = await signed_in(chromium, agora, "en-US")
    await page.add_init_script(COUNT)
    pk = await start(page, agora, DUEL, rounds="1")
    await page.wait_for_selector("article.turn-running .text.live:not(:empty)", timeout=20000)
    nodes = []
    for _ in range(12):
        nodes.append(
            await page.evaluate(
                "Math.max(0, ...Array.from(document.querySelectorAll('article.turn-running .text.live'),"
                " (el) => el.childNodes.length))"
            )
        )
        await page.wait_for_timeout(150)
    assert await page.evaluate("window.__counts.deltas") >= 10  # the text streamed meanwhile
    assert max(nodes) <= 1, nodes
    live_text = await page.text_content("article.turn-running .text.live")
    await page.wait_for_selector("#debate-report h2", timeout=90000)
    stored = await page.context.request.get(f"{agora.url}/debates/{pk}/export.json")
    speeches = [turn["text"] for turn in (await stored.json())["turns"]]
    assert live_text.strip() and any(speech.startswith(live_text.strip()[:20]) for speech in speeches), live_text
