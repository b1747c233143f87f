"""The live audience's rules (#30), in process: one vote per viewer and phase (a second replaces
the first), the windows (before until the first round ends, after once the report is in, closed by
the owner), questions from the floor (length, rate, plain text), up-votes once per viewer, who may
moderate, a hidden question and a removed viewer, the exports, and a taken question reaching
every speaker's next prompt as material (the duel's isolation holds)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import translation

from debates import audience, runner
from debates.forms import create_debate
from debates.models import Debate, FloorQuestion, Report, Status, Turn, Vote

pytestmark = pytest.mark.django_db(transaction=True)
DUEL = "念佛与参禅，哪条路更适合现代人修行？"
HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">{{ 7*7 }} ‮evil'


def make_duel(owner) -> Debate:
    debate, errors = create_debate({"topic": DUEL, "format": "duel", "rounds": 1}, owner=owner)
    assert not errors, errors
    debate.shared, debate.share_token = True, "tok-" + str(debate.pk).rjust(20, "x")
    debate.save(update_fields=["shared", "share_token"])
    return debate


def viewer(user=None, debate=None, address: str = "127.0.0.1") -> Client:
    """A browser: signed in as `user`, or an anonymous one that opened the share link; from
    `address` (what Django gives as REMOTE_ADDR: the audience's limits per address key on it)."""
    client = Client(HTTP_ACCEPT_LANGUAGE="en", REMOTE_ADDR=address)
    if user is not None:
        client.force_login(user)
    if debate is not None:
        assert client.get(f"/debates/{debate.pk}/?share={debate.share_token}").status_code == 200
    return client


def post(client, debate, what: str, data=None, htmx=True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(f"/debates/{debate.pk}/audience/{what}/", data or {}, **headers)


def sides(debate) -> list[str]:
    return [s.key for s in audience.options(debate)]


def test_one_vote_per_viewer_and_phase_a_second_replaces_the_first(libraries, alice, bob):
    debate = make_duel(alice)
    a, b = sides(debate)
    owner, friend, stranger = viewer(alice), viewer(bob, debate), viewer(debate=debate)
    for client, choice in ((owner, a), (friend, b), (stranger, b)):
        assert post(client, debate, "vote", {"choice": choice}).status_code == 200
    assert post(stranger, debate, "vote", {"choice": a}).status_code == 200  # changes its mind
    assert audience.tallies(debate)["before"] == {a: 2, b: 1}
    assert Vote.objects.filter(debate=debate).count() == 3
    # The anonymous browser is one voter through its signed cookie; a forged cookie is a new nobody.
    assert stranger.cookies[audience.VOTER_COOKIE].value
    forged = viewer(debate=debate)
    forged.cookies[audience.VOTER_COOKIE] = "anon-made-up"
    post(forged, debate, "vote", {"choice": a})
    assert Vote.objects.filter(debate=debate).count() == 4
    # Not a side: refused, nothing stored.
    answer = post(owner, debate, "vote", {"choice": "nobody"}).content.decode()
    assert "Choose one of the sides." in answer
    # Someone without the link sees nothing (404), and votes nothing.
    assert post(viewer(), debate, "vote", {"choice": a}).status_code == 404


def test_a_duels_sides_are_fixed_at_its_start_and_its_page_reads_no_library(libraries, alice, monkeypatch):
    """The pair a duel's vote is on is chosen with the start form's libraries and kept: the live
    page (300 loads at 100 debates) never reads the libraries again to draw the panel."""
    from debates import specs
    from debates.models import Audience

    debate = make_duel(alice)
    fixed = Audience.objects.get(debate=debate).sides
    assert len(fixed) == 2 and all(side["key"] and side["name"] for side in fixed), fixed

    def no_library(*args, **kwargs):
        raise AssertionError("the page read the libraries")

    monkeypatch.setattr(specs, "library_spec", no_library)
    page = viewer(alice).get(f"/debates/{debate.pk}/")
    assert page.status_code == 200
    assert [s.key for s in audience.options(debate)] == [side["key"] for side in fixed]


def audience_reads(client, debate) -> list[str]:
    """The reads of votes and questions one load of the live page makes."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as seen:
        page = client.get(f"/debates/{debate.pk}/")
    assert page.status_code == 200
    tables = ('"debates_vote"', '"debates_floorquestion"')
    return [q["sql"] for q in seen.captured_queries if any(t in q["sql"] for t in tables)]


def test_a_debate_nobody_joined_in_reads_no_votes_or_questions_and_the_first_of_each_is_shown(libraries, alice, bob):
    """Most debates have no audience: their page (and the owner's moderation list) skips the
    reads of votes and questions until the first vote or question marks the audience."""
    from debates.models import Audience

    debate = make_duel(alice)
    owner, friend = viewer(alice), viewer(bob, debate)
    assert audience_reads(owner, debate) == [] and audience_reads(friend, debate) == []
    assert not Audience.objects.get(debate=debate).participated
    a, _b = sides(debate)
    post(friend, debate, "vote", {"choice": a})
    assert Audience.objects.get(debate=debate).participated
    assert len(audience_reads(owner, debate)) >= 5  # tallies, both lists of questions, moderation
    assert "1 vote" in owner.get(f"/debates/{debate.pk}/").content.decode()

    asked = make_duel(alice)  # a question alone marks it too, and its page shows the question
    post(viewer(bob, asked), asked, "ask", {"text": "What of the lay reader?"})
    assert Audience.objects.get(debate=asked).participated
    assert "What of the lay reader?" in owner.get(f"/debates/{asked.pk}/").content.decode()


def test_the_migration_marks_the_audiences_that_already_took_part(libraries, alice, bob):
    from importlib import import_module

    from django.apps import apps

    from debates.models import Audience

    voted, asked, quiet = make_duel(alice), make_duel(alice), make_duel(alice)
    audience.vote(voted, "user:9", sides(voted)[0])
    audience.ask(asked, "user:9", "Is this the question?")
    Audience.objects.update(participated=False)  # as every row was before the field
    import_module("debates.migrations.0026_audience_participated").mark(apps, None)
    marked = dict(Audience.objects.values_list("debate_id", "participated"))
    assert marked == {voted.pk: True, asked.pk: True, quiet.pk: False}


def test_the_windows_before_after_and_closed(libraries, alice):
    debate = make_duel(alice)
    a, _b = sides(debate)
    assert audience.open_phase(debate) == "before"
    debate.phases = [{"position": 1, "round": 1, "phase": "duel"}, {"position": 5, "round": 0, "phase": "close"}]
    debate.save(update_fields=["phases"])
    assert audience.open_phase(debate) is None  # the first round ended; no report yet
    with pytest.raises(audience.Refused):
        audience.vote(debate, "user:1", a)
    Report.objects.create(debate=debate, verdict_markdown="v", transcript_markdown="t")
    debate.status = Status.DONE
    debate.save(update_fields=["status"])
    assert audience.open_phase(debate) == "after"
    audience.vote(debate, "user:1", a)
    audience.settle(debate, voting_closed=True)
    assert audience.open_phase(debate) is None
    with pytest.raises(audience.Refused):
        audience.vote(debate, "user:2", a)


def test_a_roundtables_options_are_its_first_rounds_theses(libraries, alice):
    """The roundtable names its options in round 1 (each role's thesis): "before" opens once they
    are all stated (at the checkpoint) and closes when round 2 starts; "after" with the report."""
    debate, errors = create_debate(
        {
            "topic": "我们的客服产品要不要引入 RAG 知识库？",
            "format": "roundtable",
            "mode": "quick",
            "personas": ["devil-advocate", "optimist", "rag-specialist"],
        },
        owner=alice,
    )
    assert not errors, errors
    roles = [s.persona for s in debate.seats.select_related("persona").order_by("order")]
    assert len(roles) == 3
    assert sides(debate) == [] and audience.open_phase(debate) is None  # nothing named yet
    debate.status = Status.RUNNING
    debate.phases = [{"position": 1, "round": 1, "phase": "r1"}]
    debate.save(update_fields=["status", "phases"])
    for role in roles:
        Turn.objects.create(
            debate=debate,
            key=f"r1:{role.slug}",
            round=1,
            phase="r1",
            speaker_slug=role.slug,
            speaker_name=role.name,
            speaker_name_en=role.name_en,
            text="核心论点：先试点。",
            state=Turn.State.DONE,
        )
    # a statement asked again for its arguments is the same seat's, not another option
    Turn.objects.create(
        debate=debate,
        key=f"r1:{roles[1].slug}:again",
        round=1,
        phase="r1",
        speaker_slug=roles[1].slug,
        speaker_name=roles[1].name,
        speaker_name_en=roles[1].name_en,
        text="核心论点：先试点。\n论据：\n1. 成本可控。",
        state=Turn.State.DONE,
    )
    debate.status = Status.WAITING  # the checkpoint: every thesis stated
    debate.save(update_fields=["status"])
    assert sides(debate) == [r.slug for r in roles]
    assert [s.label for s in audience.options(debate, "en")] == [r.name_en or r.name for r in roles]
    assert audience.open_phase(debate) == "before"
    audience.vote(debate, "user:1", roles[0].slug)
    debate.status = Status.RUNNING
    debate.phases = [*debate.phases, {"position": 9, "round": 2, "phase": "r2"}]
    debate.save(update_fields=["status", "phases"])
    assert audience.open_phase(debate) is None  # round 2 started
    with pytest.raises(audience.Refused):
        audience.vote(debate, "user:2", roles[0].slug)
    Report.objects.create(debate=debate, verdict_markdown="v", transcript_markdown="t")
    debate.status = Status.DONE
    debate.save(update_fields=["status"])
    assert audience.open_phase(debate) == "after" and sides(debate) == [r.slug for r in roles]
    audience.vote(debate, "user:1", roles[1].slug)
    rows = {r["key"]: r for r in audience.results(debate)["sides"]}
    assert rows[roles[0].slug]["swing"] == -100 and rows[roles[1].slug]["swing"] == 100


def test_the_swing_is_in_points_of_the_room_and_the_exports_carry_it(libraries, alice):
    debate = make_duel(alice)
    a, b = sides(debate)
    for n, choice in enumerate([a, b, b, b]):  # before: 25% / 75%
        audience.vote(debate, f"user:{n}", choice)
    Report.objects.create(debate=debate, verdict_markdown="v", transcript_markdown="t")
    for n, choice in enumerate([a, a, b, b, b]):  # after: 40% / 60%
        audience.vote(debate, f"user:{n}", choice)
    with translation.override("en"):  # the swing's words are the active language's
        drawn = {row["key"]: row for row in audience.results(debate, "en")["sides"]}
    assert (drawn[a]["before_percent"], drawn[a]["after_percent"], drawn[a]["swing"]) == (25, 40, 15)
    assert drawn[b]["swing"] == -15 and drawn[a]["swing_text"] == "+15 points"
    client = viewer(alice)
    payload = json.loads(client.get(f"/debates/{debate.pk}/export.json").content)
    assert {s["key"]: s["swing"] for s in payload["audience"]["sides"]} == {a: 15, b: -15}
    markdown = client.get(f"/debates/{debate.pk}/export.md").content.decode()
    assert "+15" in markdown and "-15" in markdown
    page = client.get(f"/debates/{debate.pk}/report/").content.decode()
    assert "+15 points" in page and 'class="chart' in page


def test_questions_are_short_rate_limited_plain_text(libraries, alice, bob):
    debate = make_duel(alice)
    friend = viewer(bob, debate)
    too_long = post(friend, debate, "ask", {"text": "x" * (audience.MAX_QUESTION + 1)}).content.decode()
    assert "at most 280" in too_long and not FloorQuestion.objects.exists()
    assert "Write your question first." in post(friend, debate, "ask", {"text": "  \u200b "}).content.decode()
    assert post(friend, debate, "ask", {"text": HOSTILE}).status_code == 200
    again = post(friend, debate, "ask", {"text": "And another?"}).content.decode()
    assert "One question every 30 seconds" in again
    assert FloorQuestion.objects.count() == 1
    stored = FloorQuestion.objects.get()
    assert "\u202e" not in stored.text  # direction overrides are stripped
    for client in (viewer(alice), friend, viewer(debate=debate)):
        page = client.get(f"/debates/{debate.pk}/").content.decode()
        assert "<script>alert(1)" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Rendered for the frames too (once per language): escaped the same.
    assert "&lt;img src=x" in audience.render_public(debate, oob=True)


def test_the_hostile_corpus_stays_inert_in_questions(libraries, alice, bob):
    """Every text case of the corpus, asked through the form (as many viewers, each from its own
    address: one address is held to its budget), on every page that shows it: the owner's (with
    the moderation list), a share viewer's, the frames' part, after being taken ("From the
    floor") and in the exports."""
    from tests.security.conftest import TEXT_CASES, check_html

    debate = make_duel(alice)
    for n, case in enumerate(TEXT_CASES):
        asker = viewer(debate=debate, address=f"127.0.3.{n + 1}")
        assert post(asker, debate, "ask", {"text": case.payload[:2000]}).status_code == 200, case.id
    assert FloorQuestion.objects.count() >= len(TEXT_CASES) // 2  # the empty and too long ones refused
    owner = viewer(alice)
    for question in FloorQuestion.objects.all()[:10]:
        audience.take(debate, question.pk)
    pages = {
        "owner": owner.get(f"/debates/{debate.pk}/").content.decode(),
        "share viewer": viewer(bob, debate).get(f"/debates/{debate.pk}/").content.decode(),
        "frame": audience.render_public(debate, oob=True),
        "moderation": post(owner, debate, "settings", {}).content.decode(),
    }
    problems = [f"{where}: {p}" for where, html in pages.items() for p in check_html(html)[0]]
    assert not problems, problems[:5]


def test_up_votes_once_per_viewer_and_the_top_question_is_taken(libraries, alice, bob):
    debate = make_duel(alice)
    first = audience.ask(debate, "anon:a", "First?")
    second = audience.ask(debate, "anon:b", "Second?")
    friend = viewer(bob, debate)
    for _ in range(3):
        post(friend, debate, f"questions/{second.pk}/up")
    assert second.upvotes.count() == 1
    assert audience.open_questions(debate).first().pk == second.pk
    # Only the owner (or staff) takes or moderates: the share viewer gets a 404.
    assert post(friend, debate, "take").status_code == 404
    assert post(friend, debate, f"questions/{first.pk}/hide", {"hidden": "1"}).status_code == 404
    assert post(viewer(alice), debate, "take").status_code == 200
    assert [q.text for q in audience.taken_questions(debate.pk)] == ["Second?"]
    assert "From the floor" in viewer(debate=debate).get(f"/debates/{debate.pk}/").content.decode()


def test_a_hidden_question_and_a_removed_viewer_staff_see_all(libraries, alice, bob, staff):
    from tests.security.test_hardening import grant

    debate = make_duel(alice)
    a, _b = sides(debate)
    spam = viewer(debate=debate)
    post(spam, debate, "vote", {"choice": a})
    post(spam, debate, "ask", {"text": "Buy cheap tokens at spam.example"})
    voter = Vote.objects.get().voter
    question = FloorQuestion.objects.get()
    owner = viewer(alice)
    post(owner, debate, f"questions/{question.pk}/hide", {"hidden": "1"})
    assert "spam.example" not in audience.render_public(debate)
    assert "spam.example" not in viewer(bob, debate).get(f"/debates/{debate.pk}/").content.decode()
    watcher = viewer(grant(staff))
    staff_page = watcher.get(f"/debates/{debate.pk}/").content.decode()
    assert "spam.example" in staff_page and "Moderate the audience" in staff_page  # staff see all
    post(owner, debate, "remove", {"voter": voter})
    assert not Vote.objects.filter(voter=voter).exists()
    assert audience.tallies(debate)["before"] == {}


async def test_a_taken_question_reaches_every_speakers_next_prompt_as_material(libraries, fast_llm, alice):
    debate = await sync_to_async(make_duel)(alice)
    await sync_to_async(audience.ask)(debate, "anon:q", "What of a lay person with one free hour a day?")
    await sync_to_async(audience.take)(debate)
    assert await runner.execute(debate.pk) == "done"
    bodies = [r.body for r in fast_llm.chat_requests]
    turns = [b for b in bodies if "你是「" in b["messages"][0]["content"]]
    assert turns, "the debate ran through the fake server"
    with_floor = [b for b in turns if "one free hour a day" in b["messages"][-1]["content"]]
    masters = {b["messages"][0]["content"].split("」", 1)[0] for b in with_floor}
    assert len(masters) >= 2, masters  # both masters read it
    for body in with_floor:
        user = body["messages"][-1]["content"]
        assert "## 来自观众席的提问" in user  # as the audience's material, under its own heading
        assert "one free hour a day" not in body["messages"][0]["content"]  # never in a speaker's voice
        assert user.count("one free hour a day") == 1


async def test_a_run_sends_the_panel_again_only_when_its_window_moves(libraries, fast_llm, alice, monkeypatch):
    """A 2-round duel starts many phases; the panel is announced (and drawn in every language)
    only where the vote window moves: "before" closing after round 1, then the report opening
    "after" and closing the questions. A phase that moves nothing sends nothing."""
    debate = await sync_to_async(make_duel)(alice)
    await sync_to_async(Debate.objects.filter(pk=debate.pk).update)(options={**debate.options, "rounds": 2})
    announced: list[tuple] = []
    real = audience.announce

    def counted(debate_id: int) -> None:
        announced.append(audience.window(debate_id)[:3])  # (vote open, questions taken, report in)
        real(debate_id)

    monkeypatch.setattr(audience, "announce", counted)
    assert await runner.execute(debate.pk) == "done"
    done = await sync_to_async(Debate.objects.get)(pk=debate.pk)
    triggers = len(done.phases) + 2  # each phase, the report and the end could move a window
    assert len(done.phases) == 3, done.phases
    # Round 2's start closes "before"; the report opens "after" and closes the questions.
    assert announced == [(None, True, False), ("after", False, True)], (announced, triggers)


def test_a_joining_viewer_is_drawn_the_panel_only_when_theirs_is_older(libraries, alice):
    """Every socket's join asks for the panel's version: it is drawn (in the viewer's language)
    only for a page drawn before the latest change."""
    debate = make_duel(alice)
    a, _b = sides(debate)
    audience.vote(debate, "user:9", a)
    version, html = audience.current(debate.pk, "en")
    assert version >= 1 and 'id="audience-public"' in html, html[:200]
    assert audience.current(debate.pk, "en", seen=version) == (version, "")
    assert audience.current(debate.pk, "zh-hans", seen=version - 1)[1]
