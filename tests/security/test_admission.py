"""Every way to spend a model's tokens passes one admission (`debates.admission`), issue 24:

- finding 5: every door, walked at the owner's running limit, is refused with a clear message
  (429 from the API) and spends nothing; comparisons in flight count as running; a comparison is
  held to what the debate's budgets leave, and a regeneration's earlier attempts count against the
  money budget; the code that reaches a provider is listed, so a new door cannot skip admission;
- finding 9: Stop right after Start stops the debate and frees its slot, and a restart does not
  revive it (real daphne);
- "every Stop logs an ERROR traceback": a Stop logs one INFO line;
- "the blind comparison is not blind": see tests/worth/test_comparison.py.
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone, translation

from debates import admission, characters, comparisons, control, runner
from debates.api import tokens
from debates.mcp import tools as mcp_tools
from debates.models import Comparison, Debate, Distillation, Report, Seat, Turn
from personas.models import Persona
from testkit.http import Browser
from testkit.servers import ROOT, USERS, AgoraServer

LIMIT = "You already have 1 debate running (the limit is 1). Stop it or wait for it to finish."


def web(user) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    return client


def make(owner, status="failed", fmt="duel", question="A question about tea?", **fields) -> Debate:
    return Debate.objects.create(owner=owner, question=question, format=fmt, status=status, **fields)


def add_turn(debate, state="done", key="duel:1:a", position=1) -> Turn:
    return Turn.objects.create(
        debate=debate, key=key, position=position, phase="duel", speaker_slug="huineng",
        speaker_name="慧能", text="Some words.", state=state,
    )  # fmt: skip


def finished_duel(owner) -> Debate:
    """A finished duel of two named seats with a report: regenerate, fork, swap and compare apply."""
    debate = make(owner, status="done", question="念佛与参禅，哪条路更适合现代人修行？")
    for order, slug in enumerate(("huineng", "yinguang")):
        Seat.objects.create(debate=debate, persona=Persona.objects.get(slug=slug), order=order)
    add_turn(debate)
    Report.objects.create(
        debate=debate,
        verdict_markdown="",
        transcript_markdown="",
        data={"sections": [{"key": "v", "title": "结论", "body": "结论。"}]},
    )
    return debate


def awaiting_person(owner, deadline: timedelta) -> Debate:
    at = (timezone.now() + deadline).isoformat()
    awaiting = {"key": "duel:1:a", "human": owner.pk, "deadline_at": at, "stand_in": "llm", "parts": []}
    return make(owner, status="waiting", awaiting=awaiting)


class Walk:
    """The owner at her running limit (1, one debate running), and what she can reach."""

    def __init__(self, alice):
        self.alice = alice
        self.running = make(alice, status="running", question="Already running?")
        self.client = web(alice)

    def shown(self, response) -> str:
        return response.content.decode()


def _new(w: Walk):
    return w.shown(w.client.post("/debates/new/", {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}))


def _api_start(w: Walk):
    _row, token = tokens.issue(w.alice, "walk")
    body = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post(
        "/api/v1/debates", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 429, response.content
    return response.json()["detail"]


def _openai_chat(w: Walk):
    _row, token = tokens.issue(w.alice, "walk")
    body = {"model": "agora-duel", "messages": [{"role": "user", "content": "念佛与参禅，哪条路更适合现代人修行？"}]}
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post(
        "/openai/v1/chat/completions",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 429, response.content
    error = response.json()["error"]  # as OpenAI's API says it
    assert error["code"] == "rate_limit_exceeded", error
    return error["message"]


def _mcp_start(w: Walk):
    _row, token = tokens.issue(w.alice, "walk", language="en")
    body = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}
    with pytest.raises(mcp_tools.Failure) as refused:  # said to the agent as a tool error
        mcp_tools.start_debate(mcp_tools.caller_for(token), body)
    return str(refused.value)


def _resume(w: Walk):
    return w.shown(w.client.post(f"/debates/{make(w.alice).pk}/resume/", follow=True))


def _api_resume(w: Walk):
    _row, token = tokens.issue(w.alice, "walk")
    pk = make(w.alice).pk
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post(
        f"/api/v1/debates/{pk}/resume", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 429, response.content
    return response.json()["detail"]


def _retry(w: Walk):
    failed = make(w.alice)
    turn = add_turn(failed, state="failed")
    return w.shown(w.client.post(f"/debates/{failed.pk}/turns/{turn.pk}/retry/", follow=True))


def _checkpoint(w: Walk):
    waiting = make(w.alice, status="waiting", fmt="roundtable")
    return w.shown(w.client.post(f"/debates/{waiting.pk}/checkpoint/", {"addition": "a fact"}, follow=True))


def _speak(w: Walk):
    waiting = awaiting_person(w.alice, timedelta(minutes=5))
    return w.shown(w.client.post(f"/debates/{waiting.pk}/speak/", {"part-0": "My turn."}, follow=True))


def _deadline(w: Walk):
    """The system's door: the owner is at her limit, so the stand-in waits for the next sweep."""
    waiting = awaiting_person(w.alice, timedelta(seconds=-1))
    assert control.expire_human_turns() == []
    waiting.refresh_from_db()
    assert waiting.status == "waiting" and waiting.awaiting["key"] == "duel:1:a" and not waiting.human_inputs
    # What the sweep met, read in English as the other doors are (a sweep has no viewer's language).
    with translation.override("en"), pytest.raises(admission.RunningLimitReached) as refused:
        control.submit_human_turn(waiting, "duel:1:a", {"stand_in": "llm"}, door="deadline")
    return str(refused.value)


def _regenerate(w: Walk):
    debate = finished_duel(w.alice)
    turn = debate.turns.get()
    return w.shown(w.client.post(f"/debates/{debate.pk}/regenerate/", {"turn": turn.pk}, follow=True))


def _fork(w: Walk):
    debate = finished_duel(w.alice)
    turn = debate.turns.get()
    return w.shown(w.client.post(f"/debates/{debate.pk}/fork/", {"turn": turn.pk}, follow=True))


def _swap(w: Walk):
    debate = finished_duel(w.alice)
    return w.shown(w.client.post(f"/debates/{debate.pk}/swap/", follow=True))


def _compare(w: Walk):
    debate = finished_duel(w.alice)
    return w.shown(w.client.post(f"/debates/{debate.pk}/compare/", {"vote": "1"}, follow=True))


def _distill(w: Walk):
    """A real person named on the start form: distilling them calls the debate's model."""
    fields = {"topic": "Should we build AI customer service?", "format": "roundtable", "add_characters": "Ada Lovelace"}
    return w.shown(w.client.post("/debates/new/", fields))


def _cli_debate(w: Walk):
    with translation.override("en"), pytest.raises(CommandError) as refused:
        # --language: the terminal's messages follow the question's language unless it is given.
        question = "念佛与参禅，哪条路更适合现代人修行？"
        call_command("debate", question, "--owner", "alice", "--search", "none", "--language", "en")
    return str(refused.value)


def _cli_evaluate(w: Walk, tmp_path: Path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "1", "question": "念佛与参禅，哪条路更适合现代人修行？"}) + "\n")
    with translation.override("en"), pytest.raises(CommandError) as refused:
        call_command("evaluate", str(questions), "--owner", "alice", "--out", str(tmp_path / "out.jsonl"))
    return str(refused.value)


# Every door of `admission.DOORS`, driven as its user would: a door added there without a driver
# here fails `test_every_door_is_refused_at_the_running_limit`.
DRIVERS = {
    "new": _new,
    "api.start": _api_start,
    "resume": _resume,
    "api.resume": _api_resume,
    "openai.chat": _openai_chat,
    "retry": _retry,
    "checkpoint": _checkpoint,
    "speak": _speak,
    "deadline": _deadline,
    "regenerate": _regenerate,
    "fork": _fork,
    "swap": _swap,
    "compare": _compare,
    "distill": _distill,
    "cli.debate": _cli_debate,
    "cli.evaluate": _cli_evaluate,
    "mcp.start": _mcp_start,
}


def _doors():
    # `manage.py evaluate` reaches the database from another thread (its event loop's executor).
    threaded = pytest.mark.django_db(transaction=True)
    return [pytest.param(d, marks=threaded) if d == "cli.evaluate" else d for d in sorted(admission.DOORS)]


@pytest.mark.parametrize("door", _doors())
def test_every_door_is_refused_at_the_running_limit(door, libraries, alice, fast_llm, no_runs, settings, tmp_path):
    settings.AGORA_MAX_RUNNING_PER_USER = 1
    assert door in DRIVERS, f"the door {door!r} has no driver here: add one that uses it at the limit"
    walk = Walk(alice)
    drive = DRIVERS[door]
    shown = drive(walk, tmp_path) if door == "cli.evaluate" else drive(walk)
    assert LIMIT in shown, (door, shown[-2000:])
    # Nothing was spent, started or queued.
    assert no_runs == [] and fast_llm.chat_requests == []
    assert not Comparison.objects.exists()
    assert list(Debate.objects.filter(status__in=("queued", "loading_model", "running"))) == [walk.running]


def test_the_walk_covers_every_door():
    assert set(DRIVERS) == set(admission.DOORS)


# -- the code that reaches a provider, found by reading the source -------------------------------------

# Calls that start a model's work: a client made or streamed, a debate run or queued. The engine
# (inside an admitted run), the providers and the client factory themselves are not doors.
PRIMITIVES = {
    "clients.clients_for",
    "clients.default_client",
    "clients.provider_client",
    "client.stream",
    "runner.execute",
    "run_debate",
    "tasks.run_debate_task.enqueue",
    "run_debate_task.enqueue",
    "debate_loop.run_to_end",
    "execute",
    "dispatch",
    "baselines.ask",
    "ask",
    "baselines.single_arm",
    "single_arm",
    "baselines.vote_arm",
    "vote_arm",
}
NOT_DOORS = ("debates/engine/", "debates/providers/", "debates/clients.py", "debates/migrations/")

# Every place outside those that calls one, and why it spends only what a door admitted. A new one
# (an OpenAI-compatible endpoint, an MCP tool) fails this test until it is listed here, which means
# naming its door in `admission.DOORS`, calling `admit` (or `control.start`) and driving it above.
REACHES_A_PROVIDER = {
    "debates/control.py:dispatch": "queues a debate: only from control.start/start_new, after admission",
    "debates/control.py:start": "admission (running_limit.admit) in the same transaction, then dispatch",
    "debates/control.py:start_new": "admission (running_limit.admit) in the same transaction, then dispatch",
    "debates/control.py:resume_interrupted": "a restart: debates admitted before (a stopped one is not run)",
    "debates/control.py:watch_orphans": "several processes: debates admitted before, whose runner died",
    "debates/tasks.py:run_debate_task": "runs what dispatch or the watchdog queued",
    "debates/tasks.py:requeue": "the watchdog: a debate admitted before, whose runner died",
    "debates/runner.py:_prepare": "the runner of an admitted debate (a stopped one is not run)",
    "debates/runner.py:_execute": "the runner of an admitted debate",
    "debates/runner.py:DebateLoop.submit.tracked": "the runner of an admitted debate",
    "debates/comparisons.py:_load": "compare: comparisons.start admits before anything runs",
    "debates/comparisons.py:_answer": "compare: admitted in comparisons.start",
    "debates/comparisons.py:render": "compare: admitted in comparisons.start",
    "debates/characters.py:_ask": "distill: Cast.confirm admits, then counts the distillation while it runs",
    "debates/baselines.py:ask": "compare or cli.evaluate",
    "debates/baselines.py:single_arm": "compare or cli.evaluate",
    "debates/baselines.py:vote_arm": "compare or cli.evaluate",
    "debates/evaluation.py:judge_pair": "cli.evaluate",
    "debates/evaluation.py:debate_arm": "cli.evaluate: _run_debate_row admits",
    "debates/evaluation.py:evaluate": "cli.evaluate",
    "debates/evaluation.py:judge_clients": "cli.evaluate",
    "debates/management/commands/evaluate.py:Command.handle": "cli.evaluate",
    "debates/management/commands/debate.py:Command.run_debate": "cli.debate: admitted before runner.execute",
    "debates/provider_tools.py:fetch_models": "not a door: the admin's model list of a provider (no tokens)",
    "debates/provider_tools.py:check_connection": "not a door: staff's one-token check of a provider",
    "debates/provider_tools.py:_one_token": "not a door: staff's one-token check of a provider (max_tokens=1)",
}


def _call_sites() -> set[str]:
    found = set()
    for path in sorted(ROOT.glob("*/**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.split("/")[0] not in ("agora", "debates", "personas") or rel.startswith(NOT_DOORS):
            continue

        def walk(node, scope, rel=rel):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    walk(child, [*scope, child.name])
                    continue
                if isinstance(child, ast.Call):
                    called = child.func
                    if isinstance(called, ast.Call) and called.args:  # database_sync_to_async(dispatch)(…)
                        called = called.args[0]
                    if ast.unparse(called) in PRIMITIVES:
                        found.add(f"{rel}:{'.'.join(scope)}")
                walk(child, scope)

        walk(ast.parse(path.read_text(encoding="utf-8")), [])
    return found


def test_every_call_that_reaches_a_provider_is_behind_a_door():
    found = _call_sites()
    unlisted = sorted(found - set(REACHES_A_PROVIDER))
    assert not unlisted, f"code reaching a provider that no door admits: {unlisted}"
    assert not set(REACHES_A_PROVIDER) - found, "listed but gone: remove it from REACHES_A_PROVIDER"


def _door_literals() -> set[str]:
    """Door names the code passes: `door="…"` keywords and defaults, and the strings of admit calls."""
    named = set()
    for path in sorted((ROOT / "debates").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # `door: str = "compare"`
                arguments = node.args
                for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
                    if arg.arg == "door" and isinstance(default, ast.Constant):
                        named.add(default.value)
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "door" and isinstance(keyword.value, ast.Constant):
                    named.add(keyword.value.value)
            if ast.unparse(node.func) in ("admission.admit", "running_limit.admit"):
                named |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return named


def test_every_door_named_in_the_code_is_registered_and_every_registered_door_is_used():
    assert _door_literals() == set(admission.DOORS)


# -- comparisons count, and are held to the debate's budgets ----------------------------------------------


def test_ten_compares_at_the_limit_start_nothing(libraries, alice, fast_llm, settings):
    """The attack of the finding: at her limit, ten compares (with self-consistency, 5 calls each)."""
    settings.AGORA_MAX_RUNNING_PER_USER = 1
    make(alice, status="running")
    debate = finished_duel(alice)
    client = web(alice)
    for _ in range(10):
        response = client.post(f"/debates/{debate.pk}/compare/", {"vote": "1"}, follow=True)
        assert LIMIT in response.content.decode()
    assert not Comparison.objects.exists() and fast_llm.chat_requests == []


def _count_in(server: AgoraServer, code: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=server.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_ten_parallel_compares_on_daphne_hold_the_limit(tmp_path, template_db, fake_llm):
    """The finding as measured: ten compares sent at once by one user (limit 3) on daphne; three
    run, seven are refused, and no debate can start while they run."""
    fake_llm.token_delay = 0.0
    server = AgoraServer(tmp_path, fake_llm.base_url, template_db, AGORA_MAX_RUNNING_PER_USER="20").start()
    try:
        browser = Browser(server.url)
        browser.log_in("alice", USERS["alice"])
        topic = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "1"}
        ids = [browser.start_debate(topic) for _ in range(10)]
        for pk in ids:
            browser.wait_for(f"/debates/{pk}/export.json", lambda d: d["status"] == "done", timeout=120)
        server.stop()
        server.env["AGORA_MAX_RUNNING_PER_USER"] = "3"
        server.start()

        fake_llm.token_delay = 0.5  # the comparisons stay running while the posts race
        token = browser.token(f"/debates/{ids[0]}/report/")

        def post(path: str, fields: dict) -> tuple[str, str]:
            """(where the answer landed, the page)."""
            data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}).encode()
            headers = {"Referer": server.url, "Accept-Language": "en"}
            request = urllib.request.Request(server.url + path, data=data, headers=headers)
            with browser.follow.open(request, timeout=60) as response:
                return response.geturl(), response.read().decode()

        barrier = threading.Barrier(len(ids))
        landed: list[str] = []
        pages: list[str] = []

        def compare(pk: int) -> None:
            barrier.wait()
            url, page = post(f"/debates/{pk}/compare/", {"vote": "1"})
            landed.append("comparison" if "/compare/" in url else "report" if url.endswith("/report/") else url)
            pages.append(page)

        threads = [threading.Thread(target=compare, args=(pk,)) for pk in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        # Refused ones go back to the report with the reason (the session's messages are shared by
        # these parallel requests, so any page may be the one that shows it).
        assert sorted(landed) == ["comparison"] * 3 + ["report"] * 7, landed
        refusal = "You already have 3 debates or comparisons running (the limit is 3)."
        assert any(refusal in page for page in pages)
        assert _count_in(server, "from debates.models import Comparison; print(Comparison.objects.count())") == "3"
        assert refusal in post("/debates/new/", {"topic": topic["topic"], "format": "duel"})[1]
    finally:
        server.stop()


def test_a_comparison_in_flight_counts_as_running(libraries, alice, no_runs, settings):
    settings.AGORA_MAX_RUNNING_PER_USER = 2
    make(alice, status="running")
    debate = finished_duel(alice)
    Comparison.objects.create(debate=debate, owner=alice, order=["debate", "single"])
    response = web(alice).post("/debates/new/", {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"})
    message = "You already have 2 debates or comparisons running (the limit is 2). Stop one or wait for it to finish."
    assert message in response.content.decode() and no_runs == []
    # One whose process died long ago (past its deadline) holds no slot.
    long_ago = timezone.now() - timedelta(seconds=admission.comparison_deadline() + 1)
    Comparison.objects.update(created_at=long_ago)
    response = web(alice).post("/debates/new/", {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"})
    assert response.status_code == 302 and len(no_runs) == 1


def test_a_distillation_counts_as_running_while_its_calls_run(
    libraries, alice, fast_llm, no_runs, settings, monkeypatch
):
    """Distilling the people named on the start form runs inside the Start request: while it does,
    another Start of hers at the limit is refused; when it ends (or its deadline passed) the slot
    is free again."""
    settings.AGORA_MAX_RUNNING_PER_USER = 1
    duel = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}
    meanwhile = []
    distil_one = characters.distil_one

    def distilling(*args, **kwargs):
        # What a second request of hers meets while this one distils (made from the request's
        # own thread and database connection: what it wrote before the call is there).
        meanwhile.append(web(alice).post("/debates/new/", duel).content.decode())
        return distil_one(*args, **kwargs)

    monkeypatch.setattr(characters, "distil_one", distilling)
    fields = {"topic": "Should we build AI customer service?", "format": "roundtable", "add_characters": "Ada Lovelace"}
    page = web(alice).post("/debates/new/", fields).content.decode()
    assert len(fast_llm.chat_requests) == 1 and "Ada Lovelace" in page
    message = (
        "You already have 1 debate, comparison or character distillation running (the limit is 1). "
        "Wait for it to finish."
    )
    assert len(meanwhile) == 1 and message in meanwhile[0]
    assert not Distillation.objects.exists() and no_runs == []
    assert web(alice).post("/debates/new/", duel).status_code == 302 and len(no_runs) == 1
    # One whose request died long ago (past its deadline) holds no slot.
    Debate.objects.update(status="done")
    Distillation.objects.create(owner=alice)
    assert web(alice).post("/debates/new/", duel).status_code == 200
    long_ago = timezone.now() - timedelta(seconds=admission.distillation_deadline() + 1)
    Distillation.objects.update(created_at=long_ago)
    assert web(alice).post("/debates/new/", duel).status_code == 302 and len(no_runs) == 2


def test_one_comparison_of_a_debate_at_a_time(libraries, alice, fast_llm, settings):
    settings.AGORA_MAX_RUNNING_PER_USER = 5
    debate = finished_duel(alice)
    Comparison.objects.create(debate=debate, owner=alice, order=["debate", "single"])
    response = web(alice).post(f"/debates/{debate.pk}/compare/", follow=True)
    assert "A comparison of this debate is still being written: wait for it to finish." in response.content.decode()
    assert Comparison.objects.count() == 1 and fast_llm.chat_requests == []


def test_a_spent_money_budget_refuses_a_comparison(libraries, alice, fast_llm):
    debate = finished_duel(alice)
    Debate.objects.filter(pk=debate.pk).update(options={"money_budget": 0.01}, cost=0.006)
    Comparison.objects.create(  # an earlier comparison spent the rest
        debate=debate, owner=alice, order=["debate", "single"], state="ready",
        arms={"single": {"cost": 0.003, "rendering": {"cost": 0.001}}, "debate": {"rendering": {"cost": 0.0005}}},
    )  # fmt: skip
    response = web(alice).post(f"/debates/{debate.pk}/compare/", follow=True)
    assert "This debate&#x27;s money budget ($0.01) is spent: $0.0105 by the debate and its comparisons." in (
        response.content.decode()
    )
    assert Comparison.objects.count() == 1 and fast_llm.chat_requests == []


def test_a_spent_token_budget_refuses_a_comparison(libraries, alice, fast_llm):
    debate = finished_duel(alice)
    Debate.objects.filter(pk=debate.pk).update(
        options={"token_budget": 5000}, prompt_tokens=4000, completion_tokens=900
    )
    with (
        translation.override("en"),
        pytest.raises(admission.BudgetSpent, match=r"token budget \(5000\) is spent: 4900 tokens"),
    ):
        comparisons.start(Debate.objects.get(pk=debate.pk), alice)
    assert not Comparison.objects.exists() and fast_llm.chat_requests == []


@pytest.mark.django_db(transaction=True)
def test_a_comparison_spends_only_what_the_budget_leaves(libraries, alice, fast_llm, settings):
    """Equal cost would give the single answer the debate's cost again; the money budget leaves
    less, and the single answer's allowance and everything the comparison spent stay within it."""
    settings.AGORA_PRICE_PER_MTOK = "1,2"
    debate = finished_duel(alice)
    Debate.objects.filter(pk=debate.pk).update(options={"money_budget": 0.02}, cost=0.012, prompt_tokens=6000)
    made = comparisons.start(Debate.objects.get(pk=debate.pk), alice)
    made = _ready(made.pk)
    assert made.state == "ready", made.error
    single = made.arms["single"]
    assert single["rule"] == "the budget left" and single["max_tokens"] < 0.012 * 1e6 / 2
    left = admission.spend_for(Debate.objects.get(pk=debate.pk))
    assert left.money is not None and left.money >= 0, left
    assert fast_llm.chat_requests[0].body["max_tokens"] == single["max_tokens"]


def _ready(pk: int, timeout: float = 20) -> Comparison:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        made = Comparison.objects.get(pk=pk)
        if made.state != "running":
            return made
        time.sleep(0.05)
    raise AssertionError("the comparison was not written in time")


def test_a_regenerations_earlier_attempts_count_against_the_money_budget(db, alice):
    """Regenerate moves the shown attempt to the turn's history: the run's ledger (which holds the
    money budget) starts with what those attempts cost, not only their tokens."""
    debate = make(alice, status="done")
    turn = add_turn(debate)
    Turn.objects.filter(pk=turn.pk).update(
        history=[{"prompt_tokens": 1000, "completion_tokens": 500, "cost": 0.004}] * 3,
        state="interrupted", prompt_tokens=1000, completion_tokens=500, cost=0.004,
    )  # fmt: skip
    ledger = runner.earlier_attempts(Debate.objects.get(pk=debate.pk))
    assert ledger.total == 4 * 1500 and ledger.money == pytest.approx(0.016)
    ledger.money_cap = 0.015
    assert ledger.spent_for_rounds


# -- Stop right after Start; a restart; the log ------------------------------------------------------------


def _statuses(server: AgoraServer, ids: list[int]) -> dict[int, str]:
    browser = Browser(server.url)
    browser.log_in("alice", USERS["alice"])
    exported = {pk: browser.json(f"/debates/{pk}/export.json") for pk in ids}
    # a status other than "stopped" comes with its reason, so a failure here says what happened
    return {pk: _shown(e) for pk, e in exported.items()}


def _shown(exported: dict) -> str:
    status = exported["status"]
    return status if status == "stopped" else f"{status}: {exported['status_detail']}"


def test_stop_right_after_start_stops_frees_the_slot_and_a_restart_does_not_revive(tmp_path, template_db, fake_llm):
    fake_llm.token_delay = 0.05  # a debate that did start would still be running when looked at
    server = AgoraServer(tmp_path, fake_llm.base_url, template_db, AGORA_MAX_RUNNING_PER_USER="3").start()
    try:
        browser = Browser(server.url)
        browser.log_in("alice", USERS["alice"])
        token = browser.token("/debates/new/")
        ids = []
        for _ in range(16):  # each started and stopped at once: the limit of 3 never stands in the way
            pk = browser.start_debate(
                {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "1"}
            )
            status, _location, body = browser.post(f"/debates/{pk}/stop/", {}, form_page="/debates/new/", follow=False)
            assert status in (200, 302), body[:300]
            ids.append(pk)
        del token
        time.sleep(1.5)  # any runner still on its way has claimed by now
        statuses = _statuses(server, ids)
        log = server.log_path.read_text(errors="replace")
        assert set(statuses.values()) == {"stopped"}, (statuses, log[-3000:])
        assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
        asked = len(fake_llm.chat_requests)

        server.stop()
        server.start()  # the restart resumes what a crash interrupted; none of these
        time.sleep(1.5)
        assert set(_statuses(server, ids).values()) == {"stopped"}
        assert len(fake_llm.chat_requests) == asked, "a stopped debate was run after the restart"
    finally:
        server.stop()


def _slow_debate(owner) -> Debate:
    from debates.forms import create_debate

    debate, errors = create_debate(
        {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "personas": ["huineng", "yinguang"],
         "rounds": "1"}, owner=owner,
    )  # fmt: skip
    assert not errors, errors
    return debate


@pytest.mark.django_db(transaction=True)
async def test_stop_logs_one_info_line_and_no_traceback(libraries, alice, fast_llm, caplog):
    """Started as the start form starts it (the Tasks API's in-process backend: a thread waiting on
    the server's debate loop, here this test's loop), stopped mid-turn: one INFO line, no ERROR,
    no traceback, no failed task."""
    fast_llm.token_delay = 0.05
    caplog.set_level(logging.INFO)
    before = set(threading.enumerate())
    loop, runner.debate_loop.server_loop = runner.debate_loop.server_loop, asyncio.get_running_loop()
    try:
        debate = await sync_to_async(control.start_new)(lambda: _slow_debate(alice), door="new")
        while not fast_llm.chat_requests:  # the engine is streaming a turn
            await asyncio.sleep(0.02)
        await sync_to_async(control.stop)(debate)
        for thread in set(threading.enumerate()) - before:
            if thread.name.startswith("task-"):  # the task's thread: its outcome is logged as it ends
                await asyncio.to_thread(thread.join, 20)
    finally:
        runner.debate_loop.server_loop = loop
    await debate.arefresh_from_db()
    assert debate.status == "stopped"
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert not problems, [(r.name, r.levelname, r.getMessage()) for r in problems]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert f"debate {debate.pk} stopped" in infos, infos


def _request_stop(debate_id: int) -> None:
    from django.db import connection

    try:
        Debate.objects.filter(pk=debate_id).update(stop_requested=True)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
async def test_a_stop_that_lands_while_the_run_claims_stops_the_debate_and_frees_its_slot(
    libraries, alice, fast_llm, monkeypatch
):
    """Stop cancels the run in this process and leaves the marking to it: a cancel that arrives
    while the claim is on the database thread (whether the claim then goes through or not) still
    ends with the debate stopped, its lease free and no request to the model, not queued forever."""
    from debates import leases

    debate = await sync_to_async(_slow_debate)(alice)
    claiming, real = threading.Event(), leases.claim

    def slow_claim(debate_id, runner_id, *, force=False):
        claiming.set()
        time.sleep(0.5)  # the Stop lands now
        return real(debate_id, runner_id, force=force)

    monkeypatch.setattr(leases, "claim", slow_claim)
    run = asyncio.ensure_future(runner.execute(debate.pk))
    await asyncio.to_thread(claiming.wait, 5)
    # As control.stop does first, from a thread of its own (the database thread is in the claim).
    await asyncio.to_thread(_request_stop, debate.pk)
    assert not run.done()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await debate.arefresh_from_db()
    assert (debate.status, debate.runner_id, debate.heartbeat_at) == ("stopped", "", None)
    assert await sync_to_async(admission.running)(alice.pk) == (0, 0)
    assert not fast_llm.chat_requests


@pytest.mark.django_db(transaction=True)
def test_a_restart_fails_the_comparisons_it_interrupted(libraries, alice, no_runs):
    """In-process mode, one process writes every comparison: at its start the ones left running by
    the one before are failed, so they hold no running slot for up to their deadline."""
    from asgiref.sync import async_to_sync

    debate = finished_duel(alice)
    left = Comparison.objects.create(debate=debate, owner=alice, order=["debate", "single"])
    async_to_sync(control.resume_interrupted)()
    left.refresh_from_db()
    assert left.state == "failed" and left.error == "interrupted by a restart"
    assert admission.running(alice.pk) == (0, 0)
