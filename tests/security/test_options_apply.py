"""Options that do not apply to the chosen format (hardening round three, low): a panel-only budget
on a duel, the moderated format's character limit on a panel, were dropped without a word at the
API, the start form and MCP (which starts through the API's code). Now each door answers with an
error naming the option and the format; what a door sets on its own (the OpenAI door's answers
for nobody there) is set only where the format takes it."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from debates.api import starting, tokens
from debates.models import Debate
from tests.security.conftest import english_client

pytestmark = pytest.mark.django_db

QUESTION = "Is chanting the Buddha's name or Chan meditation the better practice for a busy modern person?"
DUEL = {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"]}


def test_the_api_names_an_option_the_format_does_not_take(libraries, alice, no_runs):
    _, token = tokens.issue(alice, "t")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT_LANGUAGE="en")
    body = {**DUEL, "token_budget": 50000}  # the panel's and the moderated format's
    made = client.post("/api/v1/debates", json.dumps(body), content_type="application/json")
    assert made.status_code == 422, made.content.decode()
    said = json.dumps(made.json(), ensure_ascii=False)
    assert "token_budget" in said and "Duel" in said, said
    assert not Debate.objects.exists() and no_runs == []


def test_the_start_form_names_an_option_the_format_does_not_take(libraries, alice, no_runs):
    posted = {**DUEL, "personas": DUEL["personas"], "max_chars": "500"}  # the moderated format's own
    response = english_client(alice).post("/debates/new/", posted)
    page = response.content.decode()
    assert response.status_code == 200 and not Debate.objects.exists()
    assert "does not apply to the Duel format" in page, page[:3000]


def test_an_unattended_start_sets_only_what_its_format_takes(libraries, alice, no_runs):
    """The OpenAI door and MCP answer for nobody there: a roundtable's 'no interruptions' is not
    pressed on a duel (it would now be refused)."""
    debate = starting.start(dict(DUEL), alice, door="openai.chat", unattended=True)
    assert debate.format == "duel" and "no_interrupt" not in debate.options
