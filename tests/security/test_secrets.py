"""API keys live only in environment variables: never in the database, a page, an export, a log
line, an event or an error message. Tested by running debates with a known fake key (one that
works, one the server refuses, a server that echoes it back, one that needs a retry, and a provider
whose server is down) and scanning everything they left behind for it, in-process and in a real
daphne server."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from io import StringIO

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import override_settings

from debates import runner
from debates.engine import events as ev
from debates.forms import create_debate
from debates.models import Debate, Provider, Turn
from testkit.fake_openai import FakeOpenAIServer, Fault
from testkit.http import Browser
from testkit.servers import USERS, AgoraServer
from tests.security.conftest import PLAIN_A, PLAIN_B, english_client

KEY = "sk-agora-SECRET-0123456789abcdef"
KEY_VAR = "AGORA_SECURITY_TEST_API_KEY"
# The key, and enough of it to recognise a partial leak (a prefix-stripped or truncated copy).
NEEDLES = (KEY, KEY.removeprefix("sk-"), "SECRET-0123456789abcdef", "0123456789abcdef")


def leaks(texts: dict[str, str]) -> dict[str, list[str]]:
    return {where: found for where, text in texts.items() if (found := [n for n in NEEDLES if n in text])}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


@pytest.fixture(scope="module")
def keyed_server():
    """Accepts only KEY, as a real provider would."""
    with FakeOpenAIServer(api_key=KEY) as server:
        yield server


@pytest.fixture
def keyed(keyed_server):
    keyed_server.reset()
    keyed_server.script = None
    yield keyed_server
    keyed_server.reset()


@pytest.fixture
def key_in_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv(KEY_VAR, KEY)


@pytest.fixture
def everything_logged(caplog):
    """Every logger at DEBUG (the SDK's and the HTTP client's included), all captured."""
    for name in [None, *logging.root.manager.loggerDict]:
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def echoes(marker: str):
    return lambda body: marker in json.dumps(body, ensure_ascii=False)


# --- in-process: every table, page, export, log record, event and error message ----------------------


@pytest.mark.django_db(transaction=True)
async def test_the_key_appears_nowhere(keyed, key_in_environment, everything_logged, plain_library, alice, superuser):
    # The keyed server quotes the key back: in a 401, in a 400 (the turn fails) and in a 500 (retried).
    keyed.inject(Fault.server_error(401, f"Incorrect API key provided: {KEY}"), times=None, when=echoes("case-401"))
    keyed.inject(Fault.server_error(400, f"Invalid request from key {KEY}"), times=None, when=echoes("case-echo"))
    keyed.inject(Fault.server_error(500, f"Overloaded, key {KEY}"), times=1, when=echoes("case-retry"))

    down_url = f"http://127.0.0.1:{closed_port()}/v1"

    def setup() -> dict[str, int]:
        refusing = Provider.objects.create(
            name="refusing", base_url=refusing_server.base_url, api_key_env=KEY_VAR, default_model="fake-model"
        )
        down = Provider.objects.create(name="down", base_url=down_url, api_key_env=KEY_VAR, default_model="m")
        debates = {}
        cases = (("ok", None), ("401", None), ("echo", None), ("retry", None), ("refused", refusing), ("down", down))
        for case, provider in cases:
            values = {"topic": f"Secret probe case-{case}?", "format": "duel", "personas": [PLAIN_A, PLAIN_B]}
            debate, errors = create_debate(values | {"rounds": "1", "provider": provider.pk if provider else None})
            assert not errors, errors
            Debate.objects.filter(pk=debate.pk).update(owner=alice)
            debates[case] = debate.pk
        return debates

    with FakeOpenAIServer(api_key="sk-some-other-valid-key") as refusing_server:
        debates = await sync_to_async(setup)()
        sinks = {case: ev.ListSink() for case in debates}
        # KEY_VAR holds the default key's value, which goes only to the origins listed (another
        # port of the same host is another server): the refusing and the closed one are listed.
        hosts = [keyed.base_url, refusing_server.base_url, down_url]
        with override_settings(OPENAI_BASE_URL=keyed.base_url, OPENAI_API_KEY_HOSTS=hosts, AGORA_PROVIDER_BACKOFF=0.01):
            outcomes = await asyncio.gather(*(runner.execute(pk, echo=sinks[c]) for c, pk in debates.items()))
        refused_requests = refusing_server.chat_requests
    outcome = dict(zip(debates, outcomes, strict=True))
    assert outcome == {
        "ok": "done",
        "401": "failed",
        "echo": "failed",
        "retry": "done",
        "refused": "failed",
        "down": "failed",
    }
    assert refused_requests and all(r.status == 401 for r in refused_requests)

    def collect() -> dict[str, str]:
        texts = {}
        dump = StringIO()
        call_command("dumpdata", stdout=dump)
        texts["database (dumpdata)"] = dump.getvalue()
        texts["turn errors"] = "\n".join(Turn.objects.values_list("error", flat=True))
        texts["status details"] = "\n".join(Debate.objects.values_list("status_detail", flat=True))
        owner, admin = english_client(alice), english_client(superuser)
        urls = ["/", "/admin/", "/admin/debates/provider/", "/admin/debates/debate/", "/admin/debates/turn/"]
        urls += [f"/admin/debates/provider/{pk}/change/" for pk in Provider.objects.values_list("pk", flat=True)]
        urls += [f"/admin/debates/turn/{pk}/change/" for pk in Turn.objects.values_list("pk", flat=True)]
        for pk in debates.values():
            urls += [f"/admin/debates/debate/{pk}/change/"]
            for suffix in ("", "report/", "export.md", "export.json"):
                response = owner.get(f"/debates/{pk}/{suffix}")
                # A failed debate has no report, so no Markdown export: its refusal is scanned too.
                assert response.status_code in (200, 400), (pk, suffix)
                texts[f"/debates/{pk}/{suffix}"] = response.content.decode()
        for url in urls:
            response = admin.get(url)
            assert response.status_code == 200, url
            texts[url] = response.content.decode()
        return texts

    texts = await sync_to_async(collect)()
    texts["events"] = "\n".join(repr(e) for sink in sinks.values() for e in sink.events)
    texts["log records"] = everything_logged.text + "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in everything_logged.records
    )
    assert not leaks(texts), leaks(texts)

    # The runs really went through the paths under test.
    errors = texts["turn errors"]
    assert f"set {KEY_VAR}" in errors  # the refused key: the message names the variable, not the key
    assert "set OPENAI_API_KEY" in errors
    assert "HTTP 400" in errors and "Invalid request" not in errors  # the echoing server: status, not its words
    assert "Invalid request from key ***" in texts["log records"]  # its words in the log, redacted
    assert "cannot reach" in errors  # the provider that is down
    assert "retrying" in texts["log records"] and "Overloaded, key ***" in texts["log records"]
    assert any(r.status == 200 for r in keyed.chat_requests)  # KEY was sent: the keyed server answered


@pytest.mark.django_db
def test_a_provider_stores_the_variable_name_never_the_key(superuser, key_in_environment):
    admin = english_client(superuser)
    form = {"name": "deepseek", "base_url": "https://api.example.com/v1", "default_model": "m"}
    form |= {"concurrency": "4", "timeout": "120"}
    response = admin.post("/admin/debates/provider/add/", form | {"api_key_env": KEY})
    assert response.status_code == 200 and not Provider.objects.exists()  # a pasted key is refused
    messages = " ".join(re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode(), re.S))
    assert messages and KEY not in messages

    response = admin.post("/admin/debates/provider/add/", form | {"api_key_env": KEY_VAR})
    assert response.status_code == 302
    provider = Provider.objects.get()
    assert provider.api_key_env == KEY_VAR
    dump = StringIO()
    call_command("dumpdata", "debates.provider", stdout=dump)
    assert KEY not in dump.getvalue() and KEY_VAR in dump.getvalue()


# --- a real server: daphne in a subprocess, its pages, its database file and its log ---------------


def test_a_real_server_never_shows_or_logs_the_key(tmp_path, template_db, keyed):
    echo = "禅净双修"  # this debate's server answers 400 with the key in its text: the turn fails
    keyed.inject(Fault.server_error(400, f"Invalid request from key {KEY}"), times=None, when=echoes(echo))
    keyed.inject(Fault.server_error(500, f"Overloaded, key {KEY}"), times=1)  # a retry, logged
    server = AgoraServer(
        tmp_path, keyed.base_url, template_db, OPENAI_API_KEY=KEY, LOG_LEVEL="DEBUG", AGORA_PROVIDER_BACKOFF="0.01"
    ).start()
    texts = {}
    try:
        browser = Browser(server.url)
        browser.log_in("alice", USERS["alice"])
        for question, end in (("念佛与参禅，哪条路更适合现代人修行？", "done"), (f"{echo}可行吗？", "failed")):
            _status, url, _page = browser.post(
                "/debates/new/", [("topic", question), ("format", "duel"), ("rounds", "1")]
            )
            path = urllib.parse.urlsplit(url).path
            assert re.fullmatch(r"/debates/\d+/", path), url
            deadline = time.monotonic() + 30
            while f'data-status="{end}"' not in browser.fetch(path)[1]:
                assert time.monotonic() < deadline, server.log()
                time.sleep(0.1)
            for page in ("", "report/", "export.md", "export.json"):
                texts[path + page] = browser.fetch(path + page)[1]
        for page in ("/", "/debates/new/", "/debates/999999/", "/no-such-page/"):
            texts[page] = browser.fetch(page)[1]
    finally:
        server.stop()
    texts["daphne log"] = server.log_path.read_text(errors="replace")
    for suffix in ("", "-wal"):
        db = server.db.with_name(server.db.name + suffix)
        if db.exists():
            texts[f"database file {db.name}"] = db.read_bytes().decode("utf-8", "replace")
    assert not leaks(texts), leaks(texts)
    assert "retrying" in texts["daphne log"]  # the log was really written at DEBUG, with the retry in it
    assert any("Invalid request from key ***" in text for text in texts.values())  # the echo, redacted
    assert any(r.status == 200 for r in keyed.chat_requests)
