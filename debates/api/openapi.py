"""What the OpenAPI schema says about the responses that are not JSON bodies."""

STREAM = (
    "Server-Sent Events: `turn`, `delta`, `replace`, `turn_done`, `status`, `report`, `end` (then the "
    "stream closes), and `reset`. Each event's data is one JSON object; each event's `id` says exactly "
    "what the client holds, so reconnecting with `Last-Event-ID` sends every remaining character once. "
    "See docs/api.md."
)


def content(media_type: str, schema: dict, description: str) -> dict:
    """`openapi_extra` for an operation whose 200 response is `media_type`."""
    return {"responses": {200: {"description": description, "content": {media_type: {"schema": schema}}}}}
