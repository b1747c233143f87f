"""A read-only API token over MCP (hardening round three, low): the MCP server refuses a tool that
is not marked read-only. The `mcp` package's own client talks to the server object in process
(its in-memory transport), acting as `manage.py mcp` does with the token it was given."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.utils import translation
from mcp import Client

from debates.api import tokens
from debates.mcp import server
from debates.models import Debate

# The server reaches the database from its own threads (database_sync_to_async).
pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Is chanting the Buddha's name or Chan meditation the better practice for a busy modern person?"
DUEL = {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"]}
READ_ONLY = "This API token is read-only: it cannot start, stop or delete debates. Make a full one to do that."


async def test_a_read_only_token_reads_over_mcp_but_cannot_start_or_stop(libraries, alice, no_runs):
    mine = await Debate.objects.acreate(owner=alice, question=QUESTION, format="duel", status="running")
    _, token = await sync_to_async(tokens.issue)(alice, "mcp", read_only=True)
    async with Client(server.build(token)) as client:
        formats = await client.call_tool("list_formats", {})
        assert not formats.is_error and json.loads(formats.content[0].text)["formats"]
        got = await client.call_tool("get_debate", {"debate_id": mine.pk})
        assert not got.is_error and json.loads(got.content[0].text)["id"] == mine.pk

        started = await client.call_tool("start_debate", DUEL)
        stopped = await client.call_tool("stop_debate", {"debate_id": mine.pk})
    # Said in the server's language (over stdio, LANGUAGE_CODE's), in either of ours.
    said = set()
    for language in ("en", "zh-hans"):
        with translation.override(language):
            said.add(translation.gettext(READ_ONLY))
    for refused in (started, stopped):
        assert refused.is_error and refused.content[0].text in said, refused.content[0].text
    await mine.arefresh_from_db()
    assert await Debate.objects.acount() == 1 and not mine.stop_requested and no_runs == []


async def test_a_full_token_starts_over_mcp(libraries, alice, no_runs):
    """The same call with a full token starts the debate: the refusal above is the scope's."""
    _, token = await sync_to_async(tokens.issue)(alice, "mcp")
    async with Client(server.build(token)) as client:
        started = await client.call_tool("start_debate", DUEL)
    assert not started.is_error, started.content[0].text
    assert await Debate.objects.acount() == 1 and len(no_runs) == 1
