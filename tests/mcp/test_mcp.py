"""Issue 29, item 2: Agora as an MCP server. An agent (the `mcp` package's own client) lists the
tools, starts a panel, waits for it with progress notifications and reads its report, over stdio
and over streamable HTTP; another user's token reaches none of it; a bad start is a tool error
naming the field; /mcp/ without a live token is a 401."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from testkit.servers import ROOT
from tests.mcp.conftest import over_http, over_stdio

pytestmark = pytest.mark.slow

TOOLS = {
    "list_formats",
    "list_personas",
    "start_debate",
    "get_debate",
    "wait_for_debate",
    "stop_debate",
    "export_debate",
}
PANEL = {
    "topic": "我们公司明年是否应该把核心交易系统迁到云上？",
    "format": "panel",
    "evidence": "去年云成本上涨 30%，团队有 12 名工程师。",
    "research_budget": "light",
}

DUEL = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": 1}


def data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def run_a_panel(client) -> tuple[int, list[tuple[float, str]]]:
    """What an agent does: look, start a panel, wait with progress, read the report."""
    assert {t.name for t in (await client.list_tools()).tools} >= TOOLS
    start_schema = next(t for t in (await client.list_tools()).tools if t.name == "start_debate").input_schema
    # The format options come from their one declaration: the API's start schema.
    assert {"rounds", "research_budget", "evidence"} <= set(start_schema["properties"])

    formats = data(await client.call_tool("list_formats", {}))["formats"]
    panel = next(f for f in formats if f["name"] == "panel")
    assert panel["description"] and "research_budget" in panel["options"]
    personas = data(await client.call_tool("list_personas", {"format": "panel"}))["personas"]["panel"]
    assert personas and all(p["id"] and p["name"] and p["description"] for p in personas)

    started = data(await client.call_tool("start_debate", PANEL))
    pk = started["id"]
    assert started["status"] == "queued" and started["report_uri"] == f"agora://debates/{pk}/report"

    progress: list[tuple[float, str]] = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    done = data(await client.call_tool("wait_for_debate", {"debate_id": pk}, progress_callback=on_progress))
    assert done["status"] == "done" and done["finished"], done
    assert done["report"] and done["turns"]
    # One notification per turn that ended, counting up, each naming its speaker.
    assert [value for value, _message in progress] == list(range(1, len(progress) + 1))
    assert len(progress) == len(done["turns"])
    assert all("?" not in message for _value, message in progress), progress

    again = data(await client.call_tool("get_debate", {"debate_id": pk}))
    assert again["report"] == done["report"] and again["round"] >= 1

    resources = (await client.list_resources()).resources
    assert f"agora://debates/{pk}/report" in {str(r.uri) for r in resources}
    report = (await client.read_resource(f"agora://debates/{pk}/report")).contents[0]
    assert report.mime_type == "text/markdown" and report.text.startswith("#")

    markdown = await client.call_tool("export_debate", {"debate_id": pk, "format": "markdown"})
    assert not markdown.is_error and len(markdown.content[0].text) > len(report.text)
    exported = data(await client.call_tool("export_debate", {"debate_id": pk, "format": "json"}))
    assert exported["id"] == pk and exported["turns"]
    return pk, progress


async def test_over_stdio_an_agent_runs_a_panel_to_its_report(agora, tokens, fake_llm):
    async with over_stdio(agora, tokens["alice"]) as client:
        await run_a_panel(client)


async def test_over_http_an_agent_runs_a_panel_to_its_report(agora, tokens, fake_llm):
    async with over_http(agora, tokens["alice"]) as client:
        pk, _progress = await run_a_panel(client)
    # Started through MCP, the debate is the token user's like any other: on their API list.
    listed = httpx2.get(f"{agora.url}/api/v1/debates", headers={"Authorization": f"Bearer {tokens['alice']}"})
    assert pk in [d["id"] for d in listed.json()["items"]]


def refused(result) -> str:
    assert result.is_error, result.content[0].text
    return result.content[0].text


async def test_another_users_token_reaches_none_of_it(agora, tokens, fake_llm):
    fake_llm.token_delay = 0.05  # still running while bob tries
    async with over_http(agora, tokens["alice"]) as alice, over_http(agora, tokens["bob"]) as bob:
        pk = data(await alice.call_tool("start_debate", DUEL))["id"]
        for tool, arguments in (
            ("get_debate", {"debate_id": pk}),
            ("wait_for_debate", {"debate_id": pk, "timeout_seconds": 5}),
            ("export_debate", {"debate_id": pk, "format": "json"}),
            ("export_debate", {"debate_id": pk, "format": "markdown"}),
            ("stop_debate", {"debate_id": pk}),
        ):
            # As the API's 404: the same words as for a debate that does not exist.
            assert refused(await bob.call_tool(tool, arguments)) == refused(
                await bob.call_tool(tool, {**arguments, "debate_id": 10**9})
            ), tool
        with pytest.raises(MCPError):
            await bob.read_resource(f"agora://debates/{pk}/report")
        assert f"agora://debates/{pk}/report" not in {str(r.uri) for r in (await bob.list_resources()).resources}

        # Alice's wait gives up at its timeout, the debate still running; her Stop stops it.
        waited = data(await alice.call_tool("wait_for_debate", {"debate_id": pk, "timeout_seconds": 1}))
        assert not waited["finished"] and waited["status"] in ("queued", "loading_model", "running")
        assert data(await alice.call_tool("stop_debate", {"debate_id": pk}))["id"] == pk
        stopped = data(await alice.call_tool("wait_for_debate", {"debate_id": pk, "timeout_seconds": 30}))
        assert stopped["status"] == "stopped"
        # A stopped debate is not stopped again.
        assert refused(await alice.call_tool("stop_debate", {"debate_id": pk}))


async def test_a_bad_start_is_a_tool_error_naming_the_field(agora, tokens):
    async with over_http(agora, tokens["alice"]) as client:
        cases = {
            "topic": {**PANEL, "topic": "  "},  # the start form's own check
            "personas": {**PANEL, "personas": ["nobody-at-all"]},
            "research_budget": {**PANEL, "research_budget": "huge"},  # an option's value, checked by the form
            "rounds": {**PANEL, "rounds": "many"},  # an option's type, checked by the schema
            "no_such_field": {**PANEL, "no_such_field": 1},  # never dropped silently
        }
        for field, arguments in cases.items():
            result = await client.call_tool("start_debate", arguments)
            said = refused(result)
            assert f"\n{field}: " in said, (field, said)
            assert field in result.structured_content["errors"], (field, result.structured_content)
        wrong = refused(await client.call_tool("get_debate", {"debate_id": "which?"}))
        assert "\ndebate_id: " in wrong


def test_http_without_a_live_token_is_401(agora, tokens):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    for authorization in (None, "Bearer agora_not-a-token", f"Basic {tokens['alice']}"):
        sent = {**headers, "Authorization": authorization} if authorization else headers
        answer = httpx2.post(f"{agora.url}/mcp/", json=ping, headers=sent)
        assert answer.status_code == 401 and answer.headers["WWW-Authenticate"] == "Bearer", authorization
        assert answer.json()["detail"]
    # A live token opens it; its answers stream through a proxy unbuffered.
    answer = httpx2.post(
        f"{agora.url}/mcp/", json=ping, headers={**headers, "Authorization": f"Bearer {tokens['alice']}"}
    )
    assert answer.status_code == 200 and answer.headers["X-Accel-Buffering"] == "no", answer.text


def test_a_body_past_the_api_limit_is_refused_before_it_is_read(agora, tokens):
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {tokens['alice']}"}
    huge = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "start_debate"}}
    huge["params"]["arguments"] = {"topic": "x" * (3 * 2**20)}  # past AGORA_MAX_API_BODY_BYTES (2.5 MB)
    answer = httpx2.post(f"{agora.url}/mcp/", json=huge, headers=headers, timeout=60)
    assert answer.status_code == 413 and answer.json()["detail"], answer.text[:300]


def test_stdio_without_a_token_refuses_clearly(agora):
    env = {k: v for k, v in agora.env.items() if k != "AGORA_MCP_TOKEN"}
    missing = subprocess.run(
        [sys.executable, "manage.py", "mcp"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode != 0 and "AGORA_MCP_TOKEN" in missing.stderr, missing.stderr
    wrong = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--token", "agora_not-a-token"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wrong.returncode != 0 and "not valid" in wrong.stderr, wrong.stderr
