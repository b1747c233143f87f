"""One signed-in HTTP client for the real-server tests and the benchmark (stdlib only): cookies,
the CSRF token, and POSTs that either follow the redirect or report where it pointed."""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browser:
    """Just enough of a browser for Django."""

    def __init__(self, base_url: str, timeout: float = 30):
        self.base_url = base_url
        self.timeout = timeout
        self.jar = http.cookiejar.CookieJar()
        self.follow = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.stay = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect)

    def fetch(self, path: str) -> tuple[int, str]:
        """(status, body) of a GET, errors included."""
        try:
            with self.follow.open(self.base_url + path, timeout=self.timeout) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def get(self, path: str) -> str:
        """The body of a GET that must succeed."""
        with self.follow.open(self.base_url + path, timeout=self.timeout) as response:
            return response.read().decode(errors="replace")

    def json(self, path: str) -> dict:
        return json.loads(self.get(path))

    def token(self, page_path: str) -> str:
        return CSRF.search(self.get(page_path)).group(1)

    def post(self, path: str, fields, *, form_page: str | None = None, follow: bool = True) -> tuple[int, str, str]:
        """POST `fields` (a dict or pairs) with the CSRF token of `form_page` (default: `path`).
        Returns (status, final URL or redirect Location, body)."""
        pairs = list(fields.items()) if isinstance(fields, dict) else list(fields)
        body = urllib.parse.urlencode([("csrfmiddlewaretoken", self.token(form_page or path)), *pairs], doseq=True)
        request = urllib.request.Request(
            self.base_url + path, data=body.encode(), headers={"Referer": self.base_url + path}
        )
        opener = self.follow if follow else self.stay
        try:
            with opener.open(request, timeout=self.timeout) as response:
                return response.status, response.geturl(), response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            if not follow and error.code in (301, 302, 303):
                return error.code, error.headers["Location"], ""
            raise

    def log_in(self, username: str, password: str) -> None:
        _status, final, _body = self.post("/accounts/login/", {"username": username, "password": password})
        assert not final.endswith("/accounts/login/"), "login failed"

    def start_debate(self, fields: dict) -> int:
        """Submit the start form; the id of the debate it created (the redirect names it)."""
        status, location, body = self.post("/debates/new/", fields, follow=False)
        match = re.search(r"/debates/(\d+)/", location) if status in (301, 302, 303) else None
        if match is None:
            raise RuntimeError(f"the start form answered {status}, not a redirect: {body[:300]}")
        return int(match.group(1))

    @property
    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)

    def wait_for(self, path: str, predicate, timeout: float = 60.0, interval: float = 0.05) -> dict:
        """Poll a JSON page until `predicate(data)` holds (the server may restart meanwhile)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.json(path)
                if predicate(last):
                    return last
            except OSError:
                pass
            time.sleep(interval)
        raise AssertionError(f"condition not reached within {timeout}s; last: {last and last.get('status')}")
