"""API token scopes (hardening round three, low): a dashboard or an MCP client wants a token that
can only read. A read-only token lists, gets and exports, and is refused (403) when it starts or
stops a debate; tokens made before scopes existed keep full access."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from debates.api import tokens
from debates.models import Debate

pytestmark = pytest.mark.django_db

QUESTION = "Is chanting the Buddha's name or Chan meditation the better practice for a busy modern person?"
DUEL = {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"]}


def api(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT_LANGUAGE="en")


def test_a_read_only_token_reads_but_cannot_start_or_stop(libraries, alice, no_runs):
    mine = Debate.objects.create(owner=alice, question=QUESTION, format="duel", status="running")
    _, token = tokens.issue(alice, "dashboard", read_only=True)
    client = api(token)
    assert client.get("/api/v1/debates").json()["count"] == 1
    assert client.get(f"/api/v1/debates/{mine.pk}").status_code == 200
    assert client.get(f"/api/v1/debates/{mine.pk}/export.json").status_code == 200

    started = client.post("/api/v1/debates", json.dumps(DUEL), content_type="application/json")
    assert started.status_code == 403, started.content.decode()
    assert "read-only" in started.json()["detail"]
    stopped = client.post(f"/api/v1/debates/{mine.pk}/stop")
    assert stopped.status_code == 403
    mine.refresh_from_db()
    assert Debate.objects.count() == 1 and not mine.stop_requested and no_runs == []


def test_a_token_is_full_by_default(libraries, alice, no_runs):
    row, token = tokens.issue(alice, "script")
    assert not row.read_only
    started = api(token).post("/api/v1/debates", json.dumps(DUEL), content_type="application/json")
    assert started.status_code == 201


def test_a_read_only_token_cannot_start_a_debate_through_the_openai_door(libraries, alice, no_runs):
    _, token = tokens.issue(alice, "chat client", read_only=True)
    body = {"model": "agora-duel", "messages": [{"role": "user", "content": QUESTION}]}
    refused = api(token).post("/openai/v1/chat/completions", json.dumps(body), content_type="application/json")
    assert refused.status_code == 403 and "read-only" in refused.content.decode()
    assert not Debate.objects.exists() and no_runs == []


def test_the_tokens_page_and_the_admin_make_read_only_tokens(alice, superuser):
    from tests.security.conftest import english_client

    assert english_client(alice).post("/accounts/tokens/", {"name": "dash", "read_only": "on"}).status_code == 200
    assert alice.api_tokens.get(name="dash").read_only
    made = english_client(superuser).post(
        "/admin/debates/apitoken/add/", {"user": superuser.pk, "name": "mcp", "read_only": "on"}
    )
    assert made.status_code == 302 and superuser.api_tokens.get(name="mcp").read_only
