"""A tiny signed-in HTTP client for the real-server tests (stdlib only)."""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.parse
import urllib.request


class Session:
    def __init__(self, base_url: str):
        self.base_url = base_url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> str:
        with self.opener.open(self.base_url + path, timeout=10) as response:
            return response.read().decode()

    def post_form(self, path: str, fields: dict, form_page: str | None = None) -> str:
        """POST with the CSRF token taken from `form_page` (default: the same path); returns the
        final URL after redirects."""
        page = self.get(form_page or path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urllib.parse.urlencode({"csrfmiddlewaretoken": token, **fields}, doseq=True).encode()
        request = urllib.request.Request(self.base_url + path, data=body, headers={"Referer": self.base_url + path})
        with self.opener.open(request, timeout=10) as response:
            return response.geturl()

    def log_in(self, username: str, password: str) -> None:
        final = self.post_form("/accounts/login/", {"username": username, "password": password})
        assert not final.endswith("/accounts/login/"), "login failed"

    def json(self, path: str) -> dict:
        return json.loads(self.get(path))

    def wait_for(self, path: str, predicate, timeout: float = 60.0, interval: float = 0.05) -> dict:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.json(path)
                if predicate(last):
                    return last
            except OSError:
                pass  # the server may be restarting
            time.sleep(interval)
        raise AssertionError(f"condition not reached within {timeout}s; last: {last and last.get('status')}")
