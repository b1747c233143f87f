"""The roundtable's seed rules where a person meets them (issue 19: 11, 12, 15): "Debate anyway" and
"About you" on the form, the roles Agora picks shown for confirmation before anything runs, and the
checkpoint that changes who sits at the table. The engine's side: tests/engine/test_seed_fidelity.py;
the checkpoint in Chromium: tests/web/test_browser.py."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from debates.models import Debate, Seat, Status, Turn
from debates.specs import debate_spec
from tests.web.formpage import errors_in

# The formats' own defaults: a remote default model (the bundled model's sizing: test_bundled_sizing.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs", "remote_default")]
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
QUESTION = "我们的客服产品要不要引入 RAG 知识库？"


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


def test_debate_anyway_and_about_you_are_on_the_form(client):
    html = client.get("/debates/new/", {"format": "roundtable"}, **EN).content.decode()
    assert 'name="force"' in html and "Debate anyway" in html
    assert 'name="user_context"' in html and "About you (optional)" in html
    duel = client.get("/debates/new/", {"format": "duel"}, **EN).content.decode()
    assert 'name="force"' not in duel  # a roundtable option only
    assert 'name="user_context"' in duel  # every persona of every format reads it


def test_about_you_and_debate_anyway_reach_the_engine(client):
    context = "我们是 8 人的小团队，预算 20 万，三个月内要上线。"
    personas = ["devil-advocate", "optimist", "rag-specialist", "llm-architect"]
    response = client.post(
        "/debates/new/",
        {"topic": QUESTION, "format": "roundtable", "personas": personas, "user_context": context, "force": "on"},
    )
    assert response.status_code == 302
    spec = debate_spec(Debate.objects.get())
    assert spec.options.user_context == context and spec.options.force is True


def test_nobody_chosen_shows_the_picked_roles_to_confirm_and_creates_nothing(client, no_runs):
    response = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable"}, **EN)

    html = response.content.decode()
    assert response.status_code == 200 and not Debate.objects.exists() and no_runs == []
    notice = html.split('id="start-notice"')[1].split("</div>")[0]
    assert "<h2>Confirm the table</h2>" in notice  # the page says what this step is
    assert "Agora picked these roles for your question" in notice and "Nothing has started yet" in notice
    assert ">Start with these roles</button>" in html
    picked = re.findall(r'name="personas" value="([^"]+)" id="[^"]+" checked', html)
    assert len(picked) == 5 and "devil-advocate" in picked  # 2 L1 + 3 L2, as the seed's good table
    assert "rag-specialist" in picked  # the question is about RAG

    response = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable", "personas": picked})
    assert response.status_code == 302
    assert [s.persona.slug for s in Debate.objects.get().seats.order_by("order")] == picked


def test_the_form_says_before_the_first_start_that_it_only_shows_the_roles(client):
    html = client.get("/debates/new/", {"format": "roundtable"}, **EN).content.decode()
    assert "Start first shows the roles Agora picks for you to confirm" in html
    assert 'id="start-notice"' not in html and ">Start the debate</button>" in html
    duel = client.get("/debates/new/", {"format": "duel"}, **EN).content.decode()
    assert "Start first shows the roles" not in duel  # the duel starts at once


def test_a_mode_word_in_the_question_picks_the_roles_for_that_mode(client):
    response = client.post("/debates/new/", {"topic": "快速看看：" + QUESTION, "format": "roundtable"}, **EN)
    picked = re.findall(r'name="personas" value="([^"]+)" id="[^"]+" checked', response.content.decode())
    assert len(picked) == 3  # quick: three roles


# -- the checkpoint ---------------------------------------------------------------------------------


def waiting_table(owner) -> Debate:
    """A roundtable at its checkpoint: four seats, each with its finished round-1 statement."""
    debate = Debate.objects.create(owner=owner, question=QUESTION, format="roundtable", status=Status.WAITING)
    from personas.models import Persona

    for order, slug in enumerate(["devil-advocate", "optimist", "rag-specialist", "llm-architect"]):
        persona = Persona.objects.get(slug=slug, library__format="roundtable")
        Seat.objects.create(debate=debate, persona=persona, order=order)
        Turn.objects.create(
            debate=debate,
            key=f"r1:{slug}",
            round=1,
            phase="r1",
            speaker_slug=slug,
            speaker_name=persona.name,
            text="核心论点：试点。",
            state=Turn.State.DONE,
        )
    return debate


def test_the_checkpoint_form_offers_the_table(client, alice):
    debate = waiting_table(alice)
    html = client.get(f"/debates/{debate.pk}/", **EN).content.decode()
    form = html.split('id="checkpoint-form"')[1].split("</form>")[0]
    assert re.findall(r'name="keep" value="([^"]+)" checked', form) == [
        "devil-advocate",
        "optimist",
        "rag-specialist",
        "llm-architect",
    ]
    offered = re.findall(r'name="add" value="([^"]+)"', form)
    assert "growth-pm" in offered and "optimist" not in offered


def test_continuing_with_a_changed_table_seats_and_unseats(client, alice, no_runs):
    debate = waiting_table(alice)
    response = client.post(
        f"/debates/{debate.pk}/checkpoint/",
        {"table": "1", "keep": ["devil-advocate", "optimist", "llm-architect"], "add": ["growth-pm"]},
    )
    assert response.status_code == 302
    debate.refresh_from_db()
    assert debate.status == Status.QUEUED and no_runs == [debate.pk]
    assert debate.options == {"joined": ["growth-pm"], "left": ["rag-specialist"]}
    assert "growth-pm" in [s.persona.slug for s in debate.seats.all()]
    assert debate.checkpoint_reply == ""


def test_a_table_out_of_the_modes_bounds_is_refused_and_nothing_changes(client, alice, no_runs):
    debate = waiting_table(alice)
    response = client.post(
        f"/debates/{debate.pk}/checkpoint/", {"table": "1", "keep": ["devil-advocate", "optimist"]}, follow=True, **EN
    )
    assert "This table seats 4–5 roles; the change would leave 2." in response.content.decode()
    debate.refresh_from_db()
    assert debate.status == Status.WAITING and debate.options == {} and no_runs == []
    assert debate.seats.count() == 4


def test_a_table_without_two_stances_is_refused_at_the_checkpoint(client, alice, no_runs):
    """The seed's 每场必选 2-3 个 L1 holds when the table changes: dropping the optimist (an L1
    stance) for an expert leaves one stance, which the start form would refuse too."""
    debate = waiting_table(alice)
    response = client.post(
        f"/debates/{debate.pk}/checkpoint/",
        {"table": "1", "keep": ["devil-advocate", "rag-specialist", "llm-architect"], "add": ["growth-pm"]},
        follow=True,
        **EN,
    )
    assert "A roundtable seats 2–3 stances" in response.content.decode()
    debate.refresh_from_db()
    assert debate.status == Status.WAITING and debate.options == {} and no_runs == []
    # Swapping one stance for another keeps two: accepted.
    response = client.post(
        f"/debates/{debate.pk}/checkpoint/",
        {"table": "1", "keep": ["devil-advocate", "rag-specialist", "llm-architect"], "add": ["data-evidence"]},
    )
    assert response.status_code == 302 and no_runs == [debate.pk]


# -- moderated: the debate's own limits within the library's bounds (issue 19: 16) ---------------------------

MODERATED = {"topic": "小公司应该先做产品还是先做销售？", "format": "moderated", "mode": "round-robin"}
TABLE = ["steve-jobs", "charlie-munger", "socrates"]


def test_moderated_limits_are_on_the_form_and_kept(client):
    html = client.get("/debates/new/", {"format": "moderated"}, **EN).content.decode()
    assert 'name="max_chars"' in html and 'name="token_budget"' in html
    response = client.post("/debates/new/", {**MODERATED, "personas": TABLE, "max_chars": 300, "token_budget": 20000})
    assert response.status_code == 302
    assert Debate.objects.get().options == {"mode": "round-robin", "max_chars": 300, "token_budget": 20000}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_chars", 50, "Between 200 and 2000 in this library."),
        ("max_chars", 5000, "Between 200 and 2000 in this library."),
        ("token_budget", 1000, "Between 5000 and 200000 in this library."),
    ],
)
def test_moderated_limits_outside_the_librarys_bounds_are_refused_beside_the_field(client, field, value, message):
    response = client.post("/debates/new/", {**MODERATED, "personas": TABLE, field: value}, **EN)
    assert response.status_code == 200 and not Debate.objects.exists()
    assert message in errors_in(response.content.decode(), f"field-{field}")


def test_a_panel_budget_too_small_for_its_verdict_is_refused(client):
    data = {"topic": "我们公司明年是否应该把核心交易系统迁到云上？", "format": "panel", "token_budget": 1200}
    response = client.post("/debates/new/", data, **EN)
    assert "At least 5000 tokens" in errors_in(response.content.decode(), "field-token_budget")
