"""A person at the table in real Chromium against a real daphne: alice takes a duel seat and
writes two turns while root watches them arrive on his own page; the deadline hands a turn to a
model; a kill -9 while the debate waits for her, and her turn still lands exactly once."""

from __future__ import annotations

import pytest

from testkit.servers import AgoraServer
from tests.web.browser import export, finished, log_in

pytestmark = [pytest.mark.browser]
QUESTION = "念佛与参禅，哪条路更适合现代人修行？"


def server_with_deadline(tmp_path, template_db, fake_llm, seconds: int) -> AgoraServer:
    return AgoraServer(tmp_path, fake_llm.base_url, template_db, AGORA_HUMAN_DEADLINE=str(seconds))


@pytest.fixture
def roomy(tmp_path, template_db, fake_llm):
    server = server_with_deadline(tmp_path, template_db, fake_llm, 300).start()
    yield server
    server.stop()


async def take_the_seat(page, server, rounds: str = "2", stand_in: str = "llm") -> int:
    await page.goto(f"{server.url}/debates/new/")
    await page.fill("#id_topic", QUESTION)
    await page.check("#persona-huineng")
    await page.check("#persona-yinguang")
    await page.check('input[name="human-yinguang"]')
    await page.select_option("#id_stand_in", stand_in)
    await page.fill("#id_rounds", rounds)
    await page.click("button[type=submit].button")
    await page.wait_for_url(lambda url: "/debates/" in url and "/new/" not in url)
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


async def write_turn(page, body: str, summary: str) -> None:
    await page.wait_for_selector("#composer", timeout=30000)
    await page.fill("#composer-0", body)
    assert (await page.inner_text("#composer-counter-0")).startswith(f"{len(body)} /")  # counted as typed
    await page.select_option("#composer-1", "无")
    await page.fill("#composer-2", summary)
    await page.click("#composer button[type=submit]")


async def test_a_person_writes_two_turns_while_another_viewer_watches_them_arrive(chromium, roomy, fake_llm):
    fake_llm.token_delay = 0.005
    alice = await chromium.page(locale="en-US")
    await log_in(alice, roomy)
    pk = await take_the_seat(alice, roomy)
    root = await chromium.page(locale="zh-CN")
    await log_in(root, roomy, "root")
    await root.goto(f"{roomy.url}/debates/{pk}/")

    await root.wait_for_selector("#waiting-for", timeout=30000)  # the watcher sees who is awaited
    assert await root.locator("#composer").is_hidden()  # and no composer: the seat is alice's
    await write_turn(alice, "念佛一门，三根普被，在家人最易行。", "持名念佛最契根机。")
    arrived = "() => (document.querySelector('article[data-key=\"duel:1:yinguang\"] .text') || {}).textContent"
    await root.wait_for_function(f"() => ({arrived})()?.includes('三根普被')", timeout=30000)
    await write_turn(alice, "净土法门，仗佛慈力，带业往生。", "信愿持名，稳当可靠。")
    await finished(root, timeout=60000)

    data = await export(alice, roomy, pk)
    assert data["status"] == "done"
    mine = {t["key"]: t for t in data["turns"] if t["speaker"] == "yinguang"}
    assert set(mine) == {"duel:1:yinguang", "duel:2:yinguang"}
    assert "三根普被" in mine["duel:1:yinguang"]["text"] and "带业往生" in mine["duel:2:yinguang"]["text"]
    assert all(t["model"] == "human · alice" and not t["history"] for t in mine.values())
    keys = await root.eval_on_selector_all("article.turn", "els => els.map(e => e.dataset.key)")
    assert sorted(keys) == sorted(t["key"] for t in data["turns"])  # each turn once on the watcher's page


async def test_the_deadline_lets_a_model_speak(chromium, tmp_path, template_db, fake_llm):
    server = server_with_deadline(tmp_path, template_db, fake_llm, 3).start()
    try:
        alice = await chromium.page(locale="en-US")
        await log_in(alice, server)
        pk = await take_the_seat(alice, server, rounds="1")
        await alice.wait_for_selector("#composer", timeout=30000)
        assert await alice.locator("[data-deadline]").count() == 1
        await finished(alice, timeout=60000)  # nobody wrote: it went on
        data = await export(alice, server, pk)
        turn = next(t for t in data["turns"] if t["key"] == "duel:1:yinguang")
        assert data["status"] == "done" and "stands in for alice" in turn["model"] and turn["text"]
    finally:
        server.stop()


async def test_a_kill_while_waiting_for_the_person_loses_nothing(chromium, roomy, fake_llm):
    alice = await chromium.page(locale="en-US")
    await log_in(alice, roomy)
    pk = await take_the_seat(alice, roomy, rounds="1")
    await alice.wait_for_selector("#composer", timeout=30000)
    roomy.kill()
    roomy.start()  # the same database: the wait is a row, not a process
    await alice.reload()
    await write_turn(alice, "念佛一门，三根普被。", "持名念佛最契根机。")
    await alice.wait_for_selector("#debate-report h2", timeout=60000)
    data = await export(alice, roomy, pk)
    keys = [t["key"] for t in data["turns"]]
    assert keys.count("duel:1:yinguang") == 1 and len(keys) == len(set(keys))
    mine = next(t for t in data["turns"] if t["key"] == "duel:1:yinguang")
    assert mine["text"].startswith("正文：念佛一门") and mine["state"] == "done" and not mine["history"]
