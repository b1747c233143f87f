"""Kill -9 the real server mid-turn, start it again: the debate completes with every turn
exactly once, the interrupted turn regenerated (its partial text kept in its history)."""

from __future__ import annotations

import json

import pytest

from testkit.http import Browser
from testkit.servers import USERS, AgoraServer


@pytest.fixture
def server(tmp_path, template_db, fake_llm):
    server = AgoraServer(tmp_path, fake_llm.base_url, template_db)
    yield server
    server.stop()


def _messages_key(messages) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize("attempt", range(5))
def test_kill_9_mid_turn_then_restart_completes_every_turn_once(server, fake_llm, attempt):
    fake_llm.token_delay = 0.015
    server.start()
    session = Browser(server.url)
    session.log_in("alice", USERS["alice"])
    pk = session.start_debate(
        {"topic": f"念佛与参禅，哪条路更适合现代人修行？（{attempt}）", "format": "duel", "rounds": "2"}
    )
    export = f"/debates/{pk}/export.json"

    # Wait until some turns are done and another is mid-stream with text, a bit later each time.
    def mid_turn(data):
        done = [t for t in data["turns"] if t["state"] == "done"]
        running = [t for t in data["turns"] if t["state"] == "running" and len(t["text"]) > 3 + attempt]
        return len(done) >= 1 + attempt % 3 and running

    before = session.wait_for(export, mid_turn)
    server.kill()
    done_before = {t["key"]: t for t in before["turns"] if t["state"] == "done"}
    interrupted_key = next(t["key"] for t in before["turns"] if t["state"] == "running")

    server.start()  # the same database: the app finds the debate left running and resumes it
    after = session.wait_for(export, lambda d: d["status"] in ("done", "failed"), timeout=90)
    assert after["status"] == "done", server.log()

    keys = [t["key"] for t in after["turns"]]
    assert len(keys) == len(set(keys)), "a turn appears twice"
    assert set(done_before) <= set(keys), "a finished turn was lost"
    assert all(t["state"] == "done" for t in after["turns"])
    for key, turn in done_before.items():
        now = next(t for t in after["turns"] if t["key"] == key)
        assert now["text"] == turn["text"], f"finished turn {key} changed"

    # The model was asked for each finished turn exactly once; only the interrupted turn twice.
    asked = {}
    for request in fake_llm.chat_requests:
        k = _messages_key(request.body["messages"])
        asked[k] = asked.get(k, 0) + 1
    for turn in after["turns"]:
        expected = 2 if turn["key"] == interrupted_key else 1
        assert asked.get(_messages_key(turn["messages"]), 0) == expected, turn["key"]
    assert sum(asked.values()) == len(after["turns"]) + 1
    interrupted = next(t for t in after["turns"] if t["key"] == interrupted_key)
    assert interrupted["history"] and interrupted["history"][0]["text"], "partial text kept in history"
