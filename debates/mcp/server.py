"""The MCP server: Agora's tools and its reports as resources, on the MCP SDK's low-level
`Server` (the tools' input schemas are the API's own, not made from Python signatures).

One server object serves both transports. Who a call acts as: over HTTP, the caller the bearer
token opened (`debates.mcp.http` puts it in the request's ASGI scope); over stdio, the token
`manage.py mcp` was given, asked again on every call so a revoked token stops working at once.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from channels.db import database_sync_to_async
from django.utils import translation
from django.utils.translation import gettext as _
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from debates import access
from debates.api import stream, tokens
from debates.mcp import tools
from debates.mcp.tools import Caller, Failure

# Where debates.mcp.http leaves the request's caller in its ASGI scope.
SCOPE_KEY = "agora.mcp_caller"
REPORT = re.compile(r"^agora://debates/(\d+)/report$")


def _sync(fn):
    # Closes stale connections around the call, as Channels' consumers do.
    return database_sync_to_async(fn)


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    arguments: type[BaseModel] | None  # None: the start schema (`tools.start_schema`)
    run: Callable[[Caller, Any, Any], Awaitable[Any]]
    read_only: bool = True

    def schema(self) -> dict:
        return tools.start_schema() if self.arguments is None else self.arguments.model_json_schema()


async def _list_formats(caller: Caller, args, ctx):
    return await _sync(tools.list_formats)(caller)


async def _list_personas(caller: Caller, args: tools.FormatChoice, ctx):
    return await _sync(tools.list_personas)(caller, args.format)


async def _start(caller: Caller, args: dict, ctx):
    return await _sync(tools.start_debate)(caller, args)


async def _get(caller: Caller, args: tools.DebateRef, ctx):
    return await _sync(tools.get_debate)(caller, args.debate_id)


async def _stop(caller: Caller, args: tools.DebateRef, ctx):
    return await _sync(tools.stop_debate)(caller, args.debate_id)


async def _export(caller: Caller, args: tools.ExportOf, ctx):
    return await _sync(tools.export_debate)(caller, args.debate_id, args.format, args.part)


def _over_http(ctx) -> bool:
    """Is this call an HTTP request's (debates.mcp.http put its caller in the scope)?"""
    request = getattr(ctx, "request", None)
    return request is not None and SCOPE_KEY in getattr(request, "scope", {})


async def _wait(caller: Caller, args: tools.WaitFor, ctx):
    """Follow the debate as the API's event stream does (`debates.api.stream.follow`: woken by
    the channel layer's frames, reading the database), sending a progress notification as each
    turn ends; then the debate as get_debate says, finished or not."""
    await _sync(tools.viewable)(caller, args.debate_id)
    changes = stream.follow(
        args.debate_id,
        None,
        language=caller.language,
        internals=access.shows_internals(caller.user),
        # Over HTTP the request's token is watched for every kind of request at once
        # (debates/api/live_tokens.py); over stdio nothing else asks, so the wait does.
        still_allowed=None if _over_http(ctx) else (lambda: _sync(tokens.is_live)(caller.token)),
    )
    speakers: dict[int, dict] = {}
    spoken = 0
    try:
        # asyncio's timeout cancels once, so the stream's own cleanup (leaving its channel
        # group) still runs; the server runs on asyncio under daphne and over stdio alike.
        async with asyncio.timeout(args.timeout_seconds):
            async for change in changes:
                if change is None:  # a quiet spell
                    continue
                event, data, _id = change
                if event == "turn":
                    speakers[data["turn"]] = data
                elif event == "turn_done":
                    spoken += 1
                    await ctx.session.report_progress(spoken, None, _progress(caller, speakers.get(data["turn"], {})))
                elif event == "end":
                    break
    except TimeoutError:
        pass
    finally:
        await changes.aclose()
    return await _sync(tools.get_debate)(caller, args.debate_id)


def _progress(caller: Caller, turn: dict) -> str:
    with translation.override(caller.language):
        return _("Round %(round)s: %(speaker)s has spoken.") % {
            "round": turn.get("round", "?"),
            "speaker": turn.get("speaker_name", "?"),
        }


TOOLS = {
    t.name: t
    for t in (
        ToolDef(
            "list_formats",
            "Agora's debate formats: what each is, how many seats, its modes, and the options start_debate "
            "takes for it (with their bounds).",
            tools.NoArguments,
            _list_formats,
        ),
        ToolDef(
            "list_personas",
            "The personas each format can seat (ids for start_debate's `personas`), with their descriptions.",
            tools.FormatChoice,
            _list_personas,
        ),
        ToolDef(
            "start_debate",
            "Start a debate on a question, checked as the New debate page checks it; the answer carries its id. "
            "Format options travel as further fields (list_formats). It runs on the server: follow it with "
            "wait_for_debate.",
            None,
            _start,
            read_only=False,
        ),
        ToolDef(
            "get_debate",
            "A debate's status, round and turns so far, and its report (Markdown) once it is done.",
            tools.DebateRef,
            _get,
        ),
        ToolDef(
            "wait_for_debate",
            "Wait until the debate is over (or the timeout passes), with a progress notification as each "
            "turn ends; then the debate as get_debate gives it.",
            tools.WaitFor,
            _wait,
        ),
        ToolDef("stop_debate", "Stop a running debate of yours.", tools.DebateRef, _stop, read_only=False),
        ToolDef(
            "export_debate",
            "The debate as the web exports it: Markdown (report and/or transcript), or JSON with every turn.",
            tools.ExportOf,
            _export,
        ),
    )
}


def _text(body: str) -> types.TextContent:
    return types.TextContent(type="text", text=body)


def _result(value: str | dict) -> types.CallToolResult:
    if isinstance(value, str):
        return types.CallToolResult(content=[_text(value)])
    body = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return types.CallToolResult(content=[_text(body)], structured_content=json.loads(body))


def _failed(failure: Failure) -> types.CallToolResult:
    return types.CallToolResult(
        content=[_text(str(failure))],
        structured_content={"errors": failure.errors} if failure.errors else None,
        is_error=True,
    )


def build(token: str | None = None) -> Server:
    """The server. `token`: over stdio, the API token every call acts with; over HTTP none (each
    request brings its own)."""

    async def caller_of(ctx) -> Caller:
        if _over_http(ctx):
            return ctx.request.scope[SCOPE_KEY]
        caller = await _sync(tools.caller_for)(token or "")
        if caller is None:
            raise MCPError(types.INVALID_REQUEST, "This API token is not valid (any more): make a new one.")
        return caller

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.schema(),
                    annotations=types.ToolAnnotations(read_only_hint=t.read_only),
                )
                for t in TOOLS.values()
            ]
        )

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            return _failed(Failure(f"No such tool: {params.name}."))
        caller = await caller_of(ctx)
        if caller.read_only and not tool.read_only:  # a read-only token reads and follows only
            with translation.override(caller.language):
                return _failed(Failure(tokens.read_only_refusal()))
        try:
            given = params.arguments or {}
            if tool.arguments is not None:
                with translation.override(caller.language):
                    given = tools.arguments(tool.arguments, given)
            return _result(await tool.run(caller, given, ctx))
        except Failure as failure:
            return _failed(failure)

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        found = await _sync(tools.reports)(await caller_of(ctx))
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r["uri"], name=f"report-{r['id']}", title=r["topic"], mime_type="text/markdown")
                for r in found
            ]
        )

    async def list_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=tools.REPORT_URI,
                    name="report",
                    description="A finished debate's report, as Markdown.",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        caller = await caller_of(ctx)
        uri = str(params.uri)
        found = REPORT.match(uri)
        try:
            if found is None:
                raise Failure(f"No such resource: {uri}")
            body = await _sync(tools.report_markdown)(caller, int(found[1]))
        except Failure as failure:
            raise MCPError(types.INVALID_PARAMS, str(failure), {"uri": uri}) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=body, mime_type="text/markdown")]
        )

    return Server(
        "agora",
        title="Agora",
        instructions="Start structured debates between AI personas and read their reports. list_formats and "
        "list_personas say what start_debate takes; wait_for_debate follows a debate to its end.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
