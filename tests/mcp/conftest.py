"""The MCP server's clients, as agents meet it: the `mcp` package's own client, over stdio (a
`manage.py mcp` subprocess on the test server's database) and over streamable HTTP (the real
daphne of `agora`, at /mcp/), each with a user's API token made on their token page."""

from __future__ import annotations

import sys

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from testkit.servers import ROOT, USERS
from tests.api.client import issue_token


@pytest.fixture(scope="module")
def tokens(agora):
    return {name: issue_token(agora.url, name, USERS[name], name="mcp") for name in ("alice", "bob")}


def over_http(agora, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))
    return Client(streamable_http_client(f"{agora.url}/mcp/", http_client=http))


def over_stdio(agora, token: str) -> Client:
    """`manage.py mcp` as a desktop agent starts it: the token in its environment, on the same
    database (and fake model server) as `agora`."""
    env = {**agora.env, "AGORA_MCP_TOKEN": token}
    return Client(StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=ROOT))
