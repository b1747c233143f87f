"""The operator's key (hardening round three, low): any user could name any model on the
operator's key (the environment's OPENAI_* server, or a provider row staff set up), and a money
budget on a model with no known price stopped nothing (the money spent is unknown, so it never
reaches the budget). Now a user who is not staff names only the models the provider lists (a
provider row's fetched models and default; the environment's AGORA_MODEL and
AGORA_DEFAULT_MODELS), and a money budget on a model with no known price is refused at start, by
the start form, so the API, the page and MCP all say so. Nothing here calls a model: no_runs."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from debates.api import starting, tokens
from debates.models import Debate, Provider
from tests.security.conftest import english_client

pytestmark = pytest.mark.django_db

QUESTION = "Is chanting the Buddha's name or Chan meditation the better practice for a busy modern person?"
DUEL = {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"]}
EXPENSIVE = "o1-pro"  # a model the operator did not offer: priced, so only the list refuses it
UNPRICED = "house-model-7b"  # no table knows it
NO_PRICE = "No price is known for model house-model-7b: set one on its provider, or use a token budget."


@pytest.fixture
def operator_server(settings):
    """The environment's OpenAI-compatible server, on the operator's key, with no price of its own."""
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.AGORA_MODEL = "gpt-4o-mini"
    settings.AGORA_PRICE_PER_MTOK = ""
    settings.AGORA_DEFAULT_MODELS = []
    return settings


def api_post(user, body: dict):
    _, token = tokens.issue(user, "t")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT_LANGUAGE="en")
    return client.post("/api/v1/debates", json.dumps(body), content_type="application/json")


def said(response) -> str:
    return json.dumps(response.json(), ensure_ascii=False)


def test_a_user_names_only_the_default_servers_listed_models(libraries, alice, operator_server, no_runs):
    refused = api_post(alice, {**DUEL, "model": EXPENSIVE})
    assert refused.status_code == 422, refused.content.decode()
    assert EXPENSIVE in said(refused) and "model" in refused.json()["errors"]
    seat = api_post(alice, {**DUEL, "seat_models": {"huineng": EXPENSIVE}})
    assert seat.status_code == 422 and EXPENSIVE in said(seat), seat.content.decode()
    assert not Debate.objects.exists() and no_runs == []

    assert api_post(alice, {**DUEL, "model": "gpt-4o-mini"}).status_code == 201  # AGORA_MODEL
    operator_server.AGORA_DEFAULT_MODELS = [EXPENSIVE]  # the operator offers it
    assert api_post(alice, {**DUEL, "model": EXPENSIVE}).status_code == 201


def test_a_user_names_only_a_provider_rows_listed_models(libraries, alice, no_runs):
    Provider.objects.create(
        name="house", base_url="https://llm.example.com/v1", default_model="m-one", offered_models=["m-one", "m-two"]
    )
    refused = api_post(alice, {**DUEL, "provider": "house", "model": "m-three"})
    assert refused.status_code == 422 and "m-three" in said(refused), refused.content.decode()
    seat = api_post(alice, {**DUEL, "seat_models": {"huineng": "house/m-three"}})
    assert seat.status_code == 422 and "m-three" in said(seat), seat.content.decode()
    assert api_post(alice, {**DUEL, "provider": "house", "model": "m-two"}).status_code == 201


def test_staff_name_any_model(libraries, superuser, operator_server, no_runs):
    assert api_post(superuser, {**DUEL, "model": EXPENSIVE}).status_code == 201


def test_a_money_budget_without_a_known_price_is_refused_at_every_door(
    libraries, alice, superuser, operator_server, no_runs
):
    operator_server.AGORA_MODEL = UNPRICED
    body = {**DUEL, "money_budget": 0.01}

    refused = api_post(alice, body)
    assert refused.status_code == 422 and NO_PRICE in refused.json()["errors"]["money_budget"], said(refused)

    page = english_client(alice).post("/debates/new/", {**body, "money_budget": "0.01"}).content.decode()
    assert NO_PRICE in page, page[:3000]

    with pytest.raises(starting.Invalid) as mcp:  # MCP's start_debate starts through here
        starting.start(dict(body), alice, door="mcp.start", unattended=True)
    assert NO_PRICE in mcp.value.errors["money_budget"]

    # Staff too: the budget could not be kept whoever set it.
    assert api_post(superuser, body).status_code == 422
    assert not Debate.objects.exists() and no_runs == []


def test_a_money_budget_on_a_priced_model_starts(libraries, alice, operator_server, no_runs):
    operator_server.AGORA_MODEL = UNPRICED
    operator_server.AGORA_PRICE_PER_MTOK = "0.5,1.5"  # the operator's price for its model
    assert api_post(alice, {**DUEL, "money_budget": 0.01}).status_code == 201
    Provider.objects.create(
        name="priced", base_url="https://llm.example.com/v1", default_model=UNPRICED, input_price=1, output_price=2
    )
    assert api_post(alice, {**DUEL, "provider": "priced", "money_budget": 0.01}).status_code == 201


def test_a_seats_unpriced_model_refuses_the_money_budget(libraries, alice, no_runs):
    Provider.objects.create(
        name="house", base_url="https://llm.example.com/v1", default_model=UNPRICED, offered_models=[UNPRICED]
    )
    body = {**DUEL, "seat_models": {"huineng": f"house/{UNPRICED}"}, "money_budget": 0.01}
    refused = api_post(alice, body)
    assert refused.status_code == 422 and NO_PRICE in refused.json()["errors"]["money_budget"], said(refused)


def test_regenerate_and_fork_name_only_the_listed_models_too(libraries, alice, operator_server, no_runs):
    """A regenerated or forked turn runs on the same key: the start form's rule holds there too."""
    debate = Debate.objects.create(owner=alice, question=QUESTION, format="duel", status="done")
    turn = debate.turns.create(key="duel:1:a", position=1, phase="duel", speaker_slug="a", text="t", state="done")
    client = english_client(alice)
    page = client.post(f"/debates/{debate.pk}/regenerate/", {"turn": turn.pk, "model": EXPENSIVE}, follow=True)
    assert EXPENSIVE in " ".join(str(m) for m in page.context["messages"])
    debate.refresh_from_db()
    assert not debate.overrides and no_runs == []

    client.post(f"/debates/{debate.pk}/fork/", {"turn": turn.pk, "model": EXPENSIVE})
    assert Debate.objects.count() == 1 and no_runs == []
    client.post(f"/debates/{debate.pk}/fork/", {"turn": turn.pk, "model": "gpt-4o-mini"})
    assert Debate.objects.count() == 2  # the offered model forks
