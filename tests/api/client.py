"""A real HTTP client for the API tests (httpx2, which the openai SDK brings): JSON calls with a
bearer token, and a Server-Sent Events reader that can hang up whenever the test says."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2

from testkit.http import Browser

NEW_TOKEN = re.compile(r"data-new-token>([^<]+)<")


@dataclass
class Event:
    id: str | None
    event: str
    data: dict


class Api:
    def __init__(self, base_url: str, token: str | None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx2.Client(base_url=base_url + "/api/v1", headers=headers, timeout=30)

    def get(self, path: str, **kwargs) -> httpx2.Response:
        return self.http.get(path, **kwargs)

    def post(self, path: str, body: dict | None = None) -> httpx2.Response:
        return self.http.post(path, json=body)

    def events(self, pk: int, last_event_id: str | None = None, timeout: float = 60) -> Iterator[Event]:
        """The debate's events until the server closes the stream (or the caller stops reading,
        which closes the connection)."""
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        with self.http.stream("GET", f"/debates/{pk}/stream", headers=headers, timeout=timeout) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            fields: dict[str, str] = {}
            for line in response.iter_lines():
                if not line:
                    if "event" in fields:
                        yield Event(fields.get("id"), fields["event"], json.loads(fields.get("data", "{}")))
                    fields = {}
                elif not line.startswith(":"):
                    name, _sep, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")


def issue_token(base_url: str, username: str, password: str, name: str = "tests") -> str:
    """A token made on the user's token page, as a person would (the page shows it once)."""
    browser = Browser(base_url)
    browser.log_in(username, password)
    _status, _url, body = browser.post("/accounts/tokens/", {"name": name})
    return NEW_TOKEN.search(body).group(1)
