"""Two web processes and two workers on real PostgreSQL and Redis: a debate started through web
A is watched live through web B in Chromium; the worker running it is killed mid-turn and the
other worker finishes it, every turn exactly once. `.ci/run` starts the services
(bin/start-services); elsewhere the test skips when they are not there."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from testkit.fake_openai import default_reply
from testkit.prose import prose
from testkit.servers import REDIS, AgoraServer, AgoraWorker, postgres_database, prepare_database, redis_ok
from tests.conftest import require_or_skip
from tests.web.browser import assert_exactly_once, export, finished, log_in, observe_stream, start


@pytest.fixture
def cluster(tmp_path, fake_llm):
    require_or_skip(redis_ok(), f"Redis is not reachable at {REDIS}; run bin/start-services")
    admin, name, url = postgres_database("agora_scale")
    env = {"REDIS_URL": REDIS, "AGORA_RUNNER": "worker", "AGORA_HEARTBEAT": "0.3", "AGORA_LEASE_SECONDS": "2"}
    prepare_database(url, {**os.environ, **env})
    processes = []
    try:
        webs = [AgoraServer(tmp_path, fake_llm.base_url, database_url=url, name=f"web{n}", **env) for n in "AB"]
        workers = [AgoraWorker(tmp_path, fake_llm.base_url, database_url=url, name=f"worker{n}", **env) for n in "12"]
        for process in (*webs, *workers):
            processes.append(process.start())
        yield webs, workers, url
    finally:
        for process in processes:
            process.stop()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def _runner_pid(url: str, pk: int) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        holder = conn.execute("SELECT runner_id FROM debates_debate WHERE id = %s", (pk,)).fetchone()[0]
    return int(holder.split(":")[1])


def _task_rows(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        query = "SELECT status, count(*) FROM django_tasks_database_dbtaskresult GROUP BY status"
        rows = conn.execute(query).fetchall()
    return dict(rows)


def _messages_key(messages) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


async def test_two_webs_two_workers_survive_a_worker_killed_mid_turn(cluster, browser_page, fake_llm):
    (web_a, web_b), workers, url = cluster
    # Turns of about 150 tokens at 20 ms (3 s each): long enough that the kill lands inside one.
    # The same messages get the same text, so the resumed turn's text is known in advance.
    fake_llm.token_delay = 0.02
    # Ordinary text after the reply: a reply repeated would be a loop, cut while it streams.
    fake_llm.script = lambda body: default_reply(body) + prose(120)
    page = browser_page
    await log_in(page, web_a)
    pk = await start(page, web_a, "念佛与参禅，哪条路更适合现代人修行？", rounds="2")
    assert page.url.startswith(web_a.url)

    # Watch through the other web process: its consumer gets frames through Redis.
    await log_in(page, web_b)
    await page.goto(f"{web_b.url}/debates/{pk}/")
    await page.wait_for_selector("article.turn-running .text.live:not(:empty)", timeout=30000)
    observed = []
    await observe_stream(page, 0.5, observed)
    assert observed, "text streamed to web B"

    # Kill -9 the worker that holds the debate, mid-turn.
    pid = _runner_pid(url, pk)
    victim = next(w for w in workers if w.process.pid == pid)
    survivor = next(w for w in workers if w is not victim)
    for _ in range(100):  # between two turns none is running: wait for the next to begin
        before = await export(page, web_b, pk)
        interrupted = [t["key"] for t in before["turns"] if t["state"] == "running"]
        if interrupted:
            break
        await asyncio.sleep(0.05)
    victim.kill()
    assert interrupted, "the worker was killed mid-turn"

    await observe_stream(page, 1.5, observed)  # the stale lease is noticed, the survivor resumes
    await finished(page, timeout=90000)
    data = await export(page, web_b, pk)
    assert data["status"] == "done", survivor.log()
    assert "its runner went silent; queued again to resume" in survivor.log()

    keys = [t["key"] for t in data["turns"]]
    assert len(keys) == len(set(keys)) and all(t["state"] == "done" for t in data["turns"])
    asked = {}
    for request in fake_llm.chat_requests:
        k = _messages_key(request.body["messages"])
        asked[k] = asked.get(k, 0) + 1
    for turn in data["turns"]:
        # A turn finished before the kill was never asked again; the interrupted one twice.
        assert asked.get(_messages_key(turn["messages"]), 0) == (2 if turn["key"] in interrupted else 1), turn["key"]
    assert_exactly_once(observed, data["turns"])
    shown = await page.eval_on_selector_all("article.turn", "els => els.map(e => e.dataset.key)")
    assert sorted(shown) == sorted(keys)

    # The killed worker's task row is closed as superseded, not left RUNNING; the survivor's
    # row is marked successful once its run returns.
    for _ in range(50):
        rows = _task_rows(url)
        if "RUNNING" not in rows:
            break
        await asyncio.sleep(0.1)
    assert rows == {"FAILED": 1, "SUCCESSFUL": 1}, rows
