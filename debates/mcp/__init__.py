"""Agora as an MCP server (Model Context Protocol): agents list the formats and personas, start a
debate, wait for it with progress, read its report and export it.

A thin door over what the JSON API uses: `tools` (the operations, as the API's access rules
allow them to the caller), `server` (the protocol: tools, resources, progress), `http` (the
streamable HTTP endpoint at /mcp/ behind the API tokens) and `manage.py mcp` (stdio, for
desktop agents). See docs/mcp.md.
"""
