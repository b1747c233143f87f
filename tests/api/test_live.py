"""The API against a real daphne and the fake OpenAI server, with a real HTTP client: tokens,
the access rules, the start form's checks, and the event stream cut mid-debate and resumed with
Last-Event-ID, which must deliver every token exactly once."""

from __future__ import annotations

import json
import re
import time

import pytest

from testkit.http import Browser
from testkit.servers import USERS
from tests.api.client import NEW_TOKEN, Api, issue_token

pytestmark = pytest.mark.slow

QUESTION = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": 1}


def wait_for(api: Api, pk: int, predicate, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        debate = api.get(f"/debates/{pk}").json()
        if predicate(debate):
            return debate
        time.sleep(0.05)
    raise AssertionError(f"not reached within {timeout}s: {debate['status']}")


def start(api: Api, **changes) -> int:
    response = api.post("/debates", {**QUESTION, **changes})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def test_every_call_needs_a_live_token(agora, alice, tokens):
    assert Api(agora.url, None).get("/debates").status_code == 401
    wrong = Api(agora.url, tokens["alice"][:-2] + "xx").get("/debates")
    assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"] == "Bearer"
    assert wrong.json()["detail"]
    assert alice.get("/debates").status_code == 200
    # The docs and the schema are public: they describe, they open nothing.
    assert Api(agora.url, None).get("/openapi.json").status_code == 200


def test_bad_input_is_refused_by_field(alice):
    empty = alice.post("/debates", {**QUESTION, "topic": "  "})
    assert empty.status_code == 422 and "topic" in empty.json()["errors"], empty.text
    typed = alice.post("/debates", {**QUESTION, "rounds": "many"})
    assert typed.status_code == 422 and "rounds" in typed.json()["errors"], typed.text
    unknown = alice.post("/debates", {**QUESTION, "format": "no-such-format"})
    assert unknown.status_code == 422 and "format" in unknown.json()["errors"], unknown.text


def test_another_users_debate_is_not_found(alice, bob, fake_llm):
    pk = start(alice)
    for path in (f"/debates/{pk}", f"/debates/{pk}/export.json", f"/debates/{pk}/export.md", f"/debates/{pk}/stream"):
        response = bob.get(path)
        assert response.status_code == 404, path
        assert response.json()["detail"]
    assert bob.post(f"/debates/{pk}/stop").status_code == 404
    assert pk not in [d["id"] for d in bob.get("/debates").json()["items"]]
    assert pk in [d["id"] for d in alice.get("/debates").json()["items"]]
    wait_for(alice, pk, lambda d: d["status"] == "done")


def test_the_stream_resumed_after_a_cut_delivers_every_token_once(agora, alice, fake_llm):
    # Slow enough that four hang-ups fit in the debate on a loaded 2-core CI machine (a resumed
    # stream's first delta per turn carries everything written while the client was away).
    fake_llm.token_delay = 0.02
    pk = start(alice)
    texts: dict[int, str] = {}
    seen_turns: list[int] = []
    last_id, cuts, events, replaced = None, 0, [], set()
    while True:
        deltas_now = 0
        ended = False
        for event in alice.events(pk, last_id):
            events.append(event.event)
            last_id = event.id
            if event.event == "turn":
                assert event.data["attempt"] == 0
                seen_turns.append(event.data["turn"])
                texts[event.data["turn"]] = ""
            elif event.event == "delta":
                turn = event.data["turn"]
                assert event.data["offset"] == len(texts[turn]), "a gap or a repeat"
                texts[turn] += event.data["text"]
                deltas_now += 1
            elif event.event == "replace":
                texts[event.data["turn"]] = event.data["text"]
                replaced.add(event.data["turn"])
            elif event.event == "end":
                ended = True
            # Hang up mid-turn, a few times: the client keeps only the last id.
            if deltas_now == 5 and cuts < 4:
                cuts += 1
                break
        if ended:
            break
    assert cuts == 4, "the debate ended before the stream could be cut"
    assert "reset" not in events
    assert len(seen_turns) == len(set(seen_turns)), "a turn announced twice"

    debate = alice.get(f"/debates/{pk}").json()
    assert debate["status"] == "done"
    final = {t["id"]: t["text"] for t in debate["turns"]}
    assert texts == final

    # What the model streamed, turn by turn, matched by the messages each turn sent.
    export = alice.get(f"/debates/{pk}/export.json").json()
    streamed = {
        json.dumps(r.body["messages"], sort_keys=True, ensure_ascii=False): r.text for r in fake_llm.chat_requests
    }
    by_key = {t["key"]: t for t in debate["turns"]}
    model_turns = [t for t in export["turns"] if t["messages"]]
    assert model_turns
    for turn in model_turns:
        pk_of_turn = by_key[turn["key"]]["id"]
        if pk_of_turn in replaced:  # the engine changed the finished reply: the stream said so
            continue
        sent = streamed[json.dumps(turn["messages"], sort_keys=True, ensure_ascii=False)]
        assert texts[pk_of_turn] == sent, turn["key"]
    assert len(replaced) < len(model_turns)
    # The hung-up streams left the server quietly (their group left, nothing raised).
    assert "Traceback" not in agora.log(), agora.log()


def test_a_finished_debate_streams_whole_and_a_stale_id_resumes_exactly(alice, fake_llm):
    pk = start(alice)
    wait_for(alice, pk, lambda d: d["status"] == "done")
    everything = list(alice.events(pk))
    assert everything[-1].event == "end" and everything[-1].data == {"status": "done"}
    assert "report" in [e.event for e in everything]
    # Reconnecting with the last id: nothing again but the end.
    assert [e.event for e in alice.events(pk, everything[-1].id)] == ["end"]
    # A malformed id starts over, and says so.
    again = list(alice.events(pk, "not-an-id"))
    assert again[0].event == "reset" and again[-1].event == "end"


def test_stop_and_resume(alice, fake_llm):
    fake_llm.token_delay = 0.03
    pk = start(alice, rounds=2)
    wait_for(alice, pk, lambda d: any(t["text"] for t in d["turns"]))
    stopped = alice.post(f"/debates/{pk}/stop")
    assert stopped.status_code == 200, stopped.text
    wait_for(alice, pk, lambda d: d["status"] == "stopped")
    assert alice.post(f"/debates/{pk}/stop").status_code == 409
    fake_llm.token_delay = 0.0
    resumed = alice.post(f"/debates/{pk}/resume")
    assert resumed.status_code == 200, resumed.text
    tail = list(alice.events(pk))
    assert tail[-1].data == {"status": "done"}
    debate = alice.get(f"/debates/{pk}").json()
    assert all(t["state"] == "done" for t in debate["turns"])
    assert alice.post(f"/debates/{pk}/resume").status_code == 409


def test_exports_are_the_web_exports(agora, alice, fake_llm):
    pk = start(alice)
    wait_for(alice, pk, lambda d: d["status"] == "done")
    web = Browser(agora.url)
    web.log_in("alice", USERS["alice"])
    md = alice.get(f"/debates/{pk}/export.md")
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert md.text == web.get(f"/debates/{pk}/export.md")
    js = alice.get(f"/debates/{pk}/export.json")
    assert js.json() == json.loads(web.get(f"/debates/{pk}/export.json"))
    assert "attachment" in js.headers["content-disposition"]


def test_the_token_page_shows_a_token_once_and_revokes_it(agora):
    web = Browser(agora.url)
    web.log_in("bob", USERS["bob"])
    _status, _url, page = web.post("/accounts/tokens/", {"name": "<b>deploy</b> script"})
    token = NEW_TOKEN.search(page).group(1)
    assert "&lt;b&gt;deploy&lt;/b&gt;" in page and "<b>deploy</b>" not in page
    assert Api(agora.url, token).get("/debates").status_code == 200
    listing = web.get("/accounts/tokens/")
    assert token not in listing and token[:12] + "…" in listing
    revoke = listing.split(token[:12])[0].rsplit('data-token="', 1)[1].split('"')[0]
    web.post(f"/accounts/tokens/{revoke}/revoke/", {}, form_page="/accounts/tokens/")
    assert Api(agora.url, token).get("/debates").status_code == 401
    assert "data-new-token" not in web.get("/accounts/tokens/")


def test_the_admin_makes_a_token_and_shows_it_once(agora):
    admin = Browser(agora.url)
    admin.log_in("root", USERS["root"])
    listing = admin.get("/admin/auth/user/?q=alice")
    alice_id = next(
        part.split("/")[0] for part in listing.split('href="/admin/auth/user/')[1:] if part.split("/")[0].isdigit()
    )
    _status, _url, body = admin.post("/admin/debates/apitoken/add/", {"user": alice_id, "name": "from the admin"})
    token = re.search(r"agora_[A-Za-z0-9_-]{40,}", body).group(0)
    assert Api(agora.url, token).get("/debates").status_code == 200
    assert token not in admin.get("/admin/debates/apitoken/")


def test_a_token_from_another_server_does_not_open_this_one(agora):
    token = issue_token(agora.url, "alice", USERS["alice"], "second")
    assert Api(agora.url, token + "x").get("/debates").status_code == 401
