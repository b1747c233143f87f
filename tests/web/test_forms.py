"""The start form: every listed error appears beside its field and creates nothing."""

from __future__ import annotations

import re

import pytest

from debates.models import Debate, Seat
from tests.web.formpage import errors_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs")]


def post(client, **fields):
    data = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}
    data.update({k: v for k, v in fields.items() if v is not None})
    if data["format"] == "panel":  # the page shows the research budget for the panel alone
        data.setdefault("research_budget", "standard")
    return client.post("/debates/new/", data)


def field_errors(response, field: str) -> str:
    """The errors shown in the field's own block (#field-<name>), or in the box above the form for
    a field the chosen format does not show."""
    html = response.content.decode()
    return errors_in(html, f"field-{field}" if field != "form" else "form-errors")


CASES = [
    ("empty question", {"topic": "   "}, "topic"),
    ("over-long question", {"topic": "问" * 1001}, "topic"),
    ("unknown persona", {"personas": ["huineng", "no-such-master"]}, "personas"),
    ("duplicate persona", {"personas": ["huineng", "huineng"]}, "personas"),
    ("too few for a duel", {"personas": ["huineng"]}, "personas"),
    ("too many for a duel", {"personas": ["huineng", "yinguang", "xuanzang"]}, "personas"),
    (
        "too many for a panel",
        {"format": "panel", "personas": ["osborn", "hegel", "bayes", "feynman", "debono", "huineng"]},
        "personas",
    ),
    ("too few for a roundtable", {"format": "roundtable", "personas": ["devil-advocate", "optimist"]}, "personas"),
    ("host as debater", {"format": "panel", "personas": ["osborn", "hegel", "cicero"]}, "personas"),
    ("moderator as debater", {"format": "moderated", "personas": ["socrates", "moderator"]}, "personas"),
    (
        "position-based without against",
        {
            "format": "moderated",
            "mode": "position-based",
            "personas": ["socrates", "confucius"],
            "position-socrates": "for",
            "position-confucius": "for",
        },
        "personas",
    ),
    (
        "position-based with a persona without a side",
        {
            "format": "moderated",
            "mode": "position-based",
            "personas": ["socrates", "confucius", "zhuangzi"],
            "position-socrates": "for",
            "position-confucius": "against",
        },
        "personas",
    ),
    (
        "persona of another format's library",
        {"format": "panel", "personas": ["osborn", "hegel", "huineng"]},
        "personas",
    ),
    ("mode of another format", {"format": "roundtable", "mode": "position-based"}, "mode"),
    ("rounds above the duel maximum", {"rounds": "9"}, "rounds"),
    ("rounds below one", {"rounds": "0"}, "rounds"),
    # Panel shows no rounds field: the error (a CLI's, or a stale page's) is shown above the form.
    ("rounds on a fixed-round format", {"format": "panel", "rounds": "3"}, "form"),
    ("mode on a format without modes", {"mode": "quick"}, "form"),
    ("unknown format", {"format": "no-such-format"}, "format"),
]


@pytest.mark.parametrize(("case", "fields", "field"), CASES, ids=[c[0] for c in CASES])
def test_each_error_is_shown_beside_its_field_and_creates_nothing(client, no_runs, case, fields, field):
    response = post(client, **fields)
    assert response.status_code == 200
    assert field_errors(response, field).strip(), f"{case}: no error beside {field}"
    assert Debate.objects.count() == 0 and Seat.objects.count() == 0
    assert no_runs == []


def test_a_valid_post_creates_the_debate_and_redirects_to_its_live_page(client, no_runs):
    response = post(client, personas=["huineng", "yinguang"], rounds="3")
    debate = Debate.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/debates/{debate.pk}/"
    assert [s.persona.slug for s in debate.seats.all()] == ["huineng", "yinguang"]
    assert debate.options["rounds"] == 3
    assert no_runs == [debate.pk]


def test_position_based_with_both_sides_is_accepted(client, no_runs):
    response = post(
        client,
        format="moderated",
        mode="position-based",
        personas=["socrates", "confucius"],
        **{"position-socrates": "for", "position-confucius": "against"},
    )
    assert response.status_code == 302
    assert dict(Debate.objects.get().seats.values_list("persona__slug", "position")) == {
        "socrates": "for",
        "confucius": "against",
    }


def test_suggestion_follows_the_question(client):
    duel = client.get("/debates/suggest/", {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"})
    assert 'data-slug="huineng"' in duel.content.decode() and 'data-slug="yinguang"' in duel.content.decode()
    assert '<label for="persona-huineng">' in duel.content.decode(), "a suggested name seats its card"
    assert "慧能大师 vs 印光大师" in duel.content.decode(), "the pair is named by its people"
    assert "huineng-vs-yinguang" not in duel.content.decode(), "no pair key is shown to people"
    table = client.get("/debates/suggest/", {"topic": "要不要给我们的 AI 产品加上 RAG 检索？", "format": "roundtable"})
    assert 'data-slug="devil-advocate"' in table.content.decode()
    moderated = client.get(
        "/debates/suggest/", {"topic": "用逆向思考看产品设计：创业公司该不该追求完美？", "format": "moderated"}
    )
    scores = [float(x) for x in re.findall(r"<small>([0-9.]+)</small>", moderated.content.decode())]
    assert len(scores) >= 2 and all(score >= 0.5 for score in scores)


def test_starting_a_debate_needs_an_account():
    from django.test import Client

    response = Client().post("/debates/new/", {"topic": "念佛与参禅", "format": "duel"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert Debate.objects.count() == 0
