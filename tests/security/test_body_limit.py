"""Request bodies bounded before they are read (issue 24, finding 1; agora/body_limit.py).

Against a real daphne on loopback, started as the Procfile starts it (DEBUG off, --proxy-headers),
with small limits so the bodies stay small here: a body over the limit, declared by
Content-Length or sent chunked, is answered 413 (JSON on the API, a page elsewhere) while the
client has sent only part of it and then waits. A server that reads a body before refusing it
(daphne holds it all, then hands all of it to the application) never answers such a client: the
rest of the body never comes. What a 400 MB body costs daphne's memory is measured by
bench/body_limit.py, not here.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import uuid

import pytest
import yaml
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.test import Client

from agora.body_limit import BodyLimitMiddleware, limit_for
from debates.api import tokens
from testkit.big_body import send_body
from testkit.http import Browser
from testkit.servers import ROOT, USERS, AgoraServer
from tests.api.client import issue_token

MB = 1024 * 1024
WEB_LIMIT = 2 * MB
API_LIMIT = 256 * 1024
ANONYMOUS_LIMIT = 64 * 1024  # AGORA_MAX_ANONYMOUS_BODY_BYTES's default: these clients send no cookie
CLAIMED = 400 * MB  # what the hostile client says it will send
WAIT = 20  # seconds a test client waits for an answer; the old server never gives one

PATHS = ["/accounts/login/", "/healthz", "/api/v1/debates"]


class ProcfileServer(AgoraServer):
    def command(self) -> list[str]:
        return [*super().command()[:-1], "--proxy-headers", "agora.asgi:application"]


@pytest.fixture(scope="module")
def server(tmp_path_factory, template_db):
    running = ProcfileServer(
        tmp_path_factory.mktemp("body-limit"),
        "http://127.0.0.1:9/v1",
        template_db,
        DEBUG="0",
        SECRET_KEY="body-limit-" + uuid.uuid4().hex * 2,
        AGORA_MAX_BODY_BYTES=str(WEB_LIMIT),
        AGORA_MAX_API_BODY_BYTES=str(API_LIMIT),
    ).start(timeout=60)
    yield running
    running.stop()


def limit(path: str) -> int:
    return ANONYMOUS_LIMIT


def assert_refused(outcome, path: str) -> None:
    assert outcome.status == 413, (outcome.status, outcome.error, outcome.body[:300])
    assert not outcome.complete  # answered while the body was still unsent
    content_type = outcome.headers["content-type"]
    if path.startswith("/api/"):
        assert content_type.startswith("application/json")
        assert "too large" in json.loads(outcome.body)["detail"]
    else:
        assert content_type.startswith("text/html")
        assert b"too large" in outcome.body
    assert outcome.headers["connection"] == "close"


@pytest.mark.parametrize("path", PATHS)
def test_a_declared_length_over_the_limit_is_refused_before_the_body(server, path):
    """400 MB announced, 64 KB sent, then the client only listens: the answer must come anyway."""
    outcome = send_body(
        "127.0.0.1",
        server.port,
        path,
        CLAIMED,
        send_at_most=64 * 1024,
        content_type="application/json" if path.startswith("/api/") else "multipart/form-data; boundary=x",
        extra_headers={"Accept-Language": "en"},
        timeout=WAIT,
    )
    assert_refused(outcome, path)


@pytest.mark.parametrize("path", PATHS)
def test_a_chunked_body_is_refused_once_it_passes_the_limit(server, path):
    """No length announced: 1 MB past the limit is sent, without the last chunk, then the client
    only listens. The server must stop reading where the limit is, not wait for the end."""
    outcome = send_body(
        "127.0.0.1",
        server.port,
        path,
        CLAIMED,
        chunked=True,
        send_at_most=limit(path) + MB,
        block=64 * 1024,
        content_type="application/json" if path.startswith("/api/") else "application/x-www-form-urlencoded",
        extra_headers={"Accept-Language": "en"},
        timeout=WAIT,
    )
    assert_refused(outcome, path)


def test_a_client_that_sends_everything_before_reading_still_gets_the_413(server):
    """urllib writes the whole body before it reads a byte: the server keeps reading and dropping
    it for a moment after answering (a lingering close), so the client finds the 413, not a reset."""
    request = urllib.request.Request(
        server.url + "/healthz", data=b"a" * (WEB_LIMIT * 4), headers={"Accept-Language": "en"}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=WAIT)
    assert refused.value.code == 413
    assert b"too large" in refused.value.read()


def test_the_refusal_is_in_the_access_log(server):
    send_body("127.0.0.1", server.port, "/accounts/login/?next=/logged", CLAIMED, send_at_most=0, timeout=WAIT)
    log = server.logged(r'"POST /accounts/login/\?next=/logged" 413')
    assert re.search(r'"POST /accounts/login/\?next=/logged" 413', log)
    assert "Traceback" not in log  # the refused connections were torn down cleanly


def multipart(fields: dict[str, str], files: dict[str, bytes]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts += [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}.txt"\r\n'
        f"Content-Type: text/plain\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, data in files.items()
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_a_form_post_within_the_limit_still_signs_in(server):
    """A multipart sign-in carrying 48 KB of file (under the anonymous 64 KB limit) goes through
    daphne's hook and the middleware to Django: the user is signed in."""
    browser = Browser(server.url)
    token = browser.token("/accounts/login/")
    body, content_type = multipart(
        {"csrfmiddlewaretoken": token, "username": "alice", "password": USERS["alice"]},
        {"attachment": b"x" * (48 * 1024)},
    )
    request = urllib.request.Request(
        server.url + "/accounts/login/",
        data=body,
        headers={"Content-Type": content_type, "Referer": server.url + "/accounts/login/"},
    )
    try:
        response = browser.stay.open(request, timeout=WAIT)
        status, location = response.status, response.headers.get("Location")
    except urllib.error.HTTPError as answer:  # the redirect, not followed
        status, location = answer.code, answer.headers.get("Location")
    assert (status, location) == (302, "/")
    assert any(cookie.name == "sessionid" for cookie in browser.jar)


def test_an_api_body_within_the_limit_reaches_the_api(server):
    """200 KB of JSON (under the API's 256 KB) is read and judged by the API itself: a topic too
    long for its field is a 422 by field, not a 413."""
    token = issue_token(server.url, "alice", USERS["alice"])
    body = json.dumps({"format": "duel", "topic": "x" * (200 * 1024)}).encode()
    request = urllib.request.Request(
        server.url + "/api/v1/debates",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}", "Accept-Language": "en"},
    )
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=WAIT)
    assert answered.value.code == 422
    assert "topic" in json.loads(answered.value.read())["errors"]


# --- the same rule at the ASGI boundary (any other server) -----------------------------------------


async def asgi_post(app, path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]):
    """Drive `app` as a server would; returns (status, headers, body, chunks the app asked for)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"accept-language", b"en"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
    }
    communicator = ApplicationCommunicator(app, scope)
    for index, chunk in enumerate(chunks):
        await communicator.send_input({"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1})
    start = await communicator.receive_output(10)
    body = b""
    while True:
        message = await communicator.receive_output(10)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(10)
    return start["status"], dict(start["headers"]), body, communicator.input_queue.qsize()


@pytest.fixture
def small_limits(settings):
    settings.AGORA_MAX_BODY_BYTES = 1_000_000
    settings.AGORA_MAX_FORM_BODY_BYTES = 100_000
    settings.AGORA_MAX_ANONYMOUS_BODY_BYTES = 100_000
    settings.AGORA_MAX_API_BODY_BYTES = 10_000


async def test_the_middleware_refuses_a_declared_length_without_reading(small_limits):
    app = BodyLimitMiddleware(get_asgi_application())
    status, headers, body, unread = await asgi_post(
        app, "/api/v1/debates", [b"{}"] * 3, [(b"content-length", b"50000"), (b"content-type", b"application/json")]
    )
    assert status == 413 and headers[b"content-type"].startswith(b"application/json")
    assert "too large" in json.loads(body)["detail"]
    assert unread == 3  # not one chunk was read


async def test_the_middleware_stops_a_chunked_body_at_the_limit(small_limits):
    app = BodyLimitMiddleware(get_asgi_application())
    chunks = [b"a" * 30_000] * 10  # 300 KB, no length announced; the limit is 100 KB
    status, headers, body, unread = await asgi_post(app, "/accounts/login/", chunks, [])
    assert status == 413 and headers[b"content-type"].startswith(b"text/html")
    assert b"too large" in body
    assert unread == 6  # the fourth chunk passed the limit; the rest were never asked for


async def test_the_middleware_gives_the_upload_limit_only_to_a_signed_in_upload(small_limits):
    """300 KB declared to the start form: refused without a session cookie (the anonymous limit),
    read with one (the upload limit; Django then judges the request)."""
    app = BodyLimitMiddleware(get_asgi_application())
    declared = [(b"content-length", b"300000"), (b"content-type", b"application/x-www-form-urlencoded")]
    status, _headers, body, unread = await asgi_post(app, "/debates/new/", [b"a"], declared)
    assert (status, unread) == (413, 1) and b"too large" in body
    cookie = [(b"cookie", b"sessionid=made-up")]
    status, _headers, _body, unread = await asgi_post(app, "/debates/new/", [b"a"], declared + cookie)
    assert status != 413 and unread == 0


@pytest.mark.parametrize(
    ("path", "signed_in", "expected"),
    [
        ("/debates/new/", True, "AGORA_MAX_BODY_BYTES"),
        ("/admin/personas/library/import/", True, "AGORA_MAX_BODY_BYTES"),
        ("/debates/new/", False, "AGORA_MAX_ANONYMOUS_BODY_BYTES"),
        ("/accounts/login/", False, "AGORA_MAX_ANONYMOUS_BODY_BYTES"),
        ("/accounts/login/", True, "AGORA_MAX_ANONYMOUS_BODY_BYTES"),
        ("/debates/7/", True, "AGORA_MAX_FORM_BODY_BYTES"),
        ("/debates/7/audience/ask/", True, "AGORA_MAX_ANONYMOUS_BODY_BYTES"),
        ("/i18n/setlang/", True, "AGORA_MAX_ANONYMOUS_BODY_BYTES"),
        ("/api/v1/debates", True, "AGORA_MAX_API_BODY_BYTES"),
        ("/api/v1/debates", False, "AGORA_MAX_ANONYMOUS_BODY_BYTES"),
    ],
)
def test_the_large_limit_is_only_for_signed_in_uploads(path, signed_in, expected):
    assert limit_for(path, signed_in=signed_in) == getattr(settings, expected)


# --- Django's own limit on the API -----------------------------------------------------------------


@pytest.mark.django_db
def test_an_api_body_django_will_not_read_is_a_json_413(alice):
    """Django refuses to read a body past DATA_UPLOAD_MAX_MEMORY_SIZE whole (RequestDataTooBig);
    the API answers that as its documented JSON error, not Django's HTML 400 page."""
    _row, token = tokens.issue(alice, "big")
    body = json.dumps({"format": "duel", "topic": "x" * (3 * MB)})
    response = Client(headers={"accept-language": "en"}).post(
        "/api/v1/debates", body, content_type="application/json", headers={"authorization": f"Bearer {token}"}
    )
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert "too large" in response.json()["detail"]


# --- one limit, everywhere it is written -----------------------------------------------------------


def test_the_default_limit_is_the_start_forms_largest_post():
    files = settings.AGORA_UPLOAD_MAX_FILES * settings.AGORA_UPLOAD_MAX_BYTES
    assert settings.AGORA_MAX_BODY_BYTES == files + settings.DATA_UPLOAD_MAX_MEMORY_SIZE + MB
    assert settings.AGORA_MAX_API_BODY_BYTES == settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_the_documented_nginx_uses_the_same_limit():
    production = (ROOT / "docs" / "production.md").read_text(encoding="utf-8")
    sample = production.split("```nginx", 1)[1].split("```", 1)[0]
    size = re.search(r"client_max_body_size\s+(\d+);", sample)
    assert size and int(size.group(1)) == settings.AGORA_MAX_BODY_BYTES


def test_compose_passes_the_limits_to_daphne():
    """compose.yaml publishes daphne with no proxy: daphne's own limit is the only one, and an
    operator's value in .env reaches it (empty means the default)."""
    web = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))["services"]["web"]
    assert web["environment"]["AGORA_MAX_BODY_BYTES"] == "${AGORA_MAX_BODY_BYTES:-}"
    assert web["environment"]["AGORA_MAX_API_BODY_BYTES"] == "${AGORA_MAX_API_BODY_BYTES:-}"
