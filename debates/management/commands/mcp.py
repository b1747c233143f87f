"""`manage.py mcp`: Agora's MCP server over stdio, for desktop agents (Claude Desktop and the like
start it as a subprocess and speak JSON-RPC on its stdin and stdout). See docs/mcp.md.

It acts as the user of an API token (made on the site's API tokens page), taken from the
AGORA_MCP_TOKEN environment variable (or --token, which other users of the machine can see in the
process list), with that user's access rules and running limit.
"""

import asyncio
import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from debates.mcp import tools
from debates.mcp.server import build
from debates.runner import debate_loop

TOKEN_VARIABLE = "AGORA_MCP_TOKEN"


class Command(BaseCommand):
    help = "Serve Agora's MCP server over stdio as the user of an API token (AGORA_MCP_TOKEN)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--token",
            default="",
            help=f"an API token (default: the {TOKEN_VARIABLE} environment variable, which the process list "
            "does not show)",
        )

    def handle(self, *args, **opts):
        token = (opts["token"] or os.environ.get(TOKEN_VARIABLE, "")).strip()
        if not token:
            raise CommandError(
                f"No API token: set {TOKEN_VARIABLE} (or pass --token) to a token made on the site's "
                "API tokens page; the MCP server acts as its user."
            )
        if tools.caller_for(token) is None:
            raise CommandError(
                f"{TOKEN_VARIABLE}: this API token is not valid (revoked, mistyped, or its user is inactive)."
            )
        anyio.run(self._serve, token)

    async def _serve(self, token: str) -> None:
        # Debates started here run on this event loop (with the in-process runner), as they run on
        # daphne's: the in-memory channel layer's frames then reach wait_for_debate at once.
        debate_loop.server_loop = asyncio.get_running_loop()
        server = build(token)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
