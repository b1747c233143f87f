"""What an attacker with an account (staff without permissions, a normal user) or without one could
do, one regression test per hole of the hardening issue. Each of these failed on the code before
the fix (the closing note of that issue lists them)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.test import Client, override_settings

from agora.asgi import application
from debates import runner, specs
from debates.engine import events as ev
from debates.engine.duel import DuelOptions
from debates.engine.text import CAPPED_MARK
from debates.models import Debate, Provider, Report, Seat, Turn
from debates.providers.base import estimate_tokens
from personas.models import Library, Persona
from testkit.fake_openai import Fault, default_reply
from testkit.http import Browser
from testkit.prose import prose
from testkit.servers import ROOT, USERS, AgoraServer, postgres_database, prepare_database
from tests.engine.conftest import HUINENG, YINGUANG, duel_spec, harness  # noqa: F401 - a fixture
from tests.security.conftest import FORBIDDEN_CHARS

ORIGIN = (b"origin", b"http://127.0.0.1")


def client_for(user=None) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    if user is not None:
        client.force_login(user)
    return client


def make_debate(owner, question="A private question about tea?", status="failed", fmt="duel", **fields) -> Debate:
    debate = Debate.objects.create(owner=owner, question=question, format=fmt, status=status, **fields)
    Turn.objects.create(
        debate=debate, key="duel:1:a", position=1, phase="duel", speaker_slug="a", speaker_name="A",
        text="partial words", state="failed", error="no answer within 1 s",
    )  # fmt: skip
    return debate


def grant(user, codename="view_all_debates"):
    user.user_permissions.add(Permission.objects.get(codename=codename))
    return type(user).objects.get(pk=user.pk)  # a fresh object: permissions are cached per instance


# -- 1. a provider cannot carry a server secret to a URL of its choice ---------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("variable", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "PATH"])
def test_a_provider_may_not_name_a_server_secret(variable):
    provider = Provider(name="evil", base_url="https://attacker.example/v1", default_model="m", api_key_env=variable)
    with pytest.raises(ValidationError) as caught:
        provider.full_clean()
    assert "api_key_env" in caught.value.message_dict
    message = " ".join(caught.value.message_dict["api_key_env"])
    assert "AGORA_PROVIDER_KEY_VARS" in message, message


@pytest.mark.django_db
def test_the_key_allow_list_is_the_operators():
    ok = Provider(name="deepseek", base_url="https://api.deepseek.com/v1", default_model="m")
    ok.api_key_env = "DEEPSEEK_API_KEY"
    ok.full_clean()  # the default allow-list: names ending in _API_KEY
    with override_settings(AGORA_PROVIDER_KEY_VARS=["MY_LLM_TOKEN", "DEEPSEEK_API_KEY@api.deepseek.com"]):
        ok.api_key_env = "MY_LLM_TOKEN"
        ok.full_clean()
        ok.api_key_env = "DEEPSEEK_API_KEY"
        ok.full_clean()
        ok.base_url = "https://attacker.example/v1"  # this key is bound to its own host
        with pytest.raises(ValidationError):
            ok.full_clean()
        ok.api_key_env = "OTHER_API_KEY"  # not on this operator's list
        with pytest.raises(ValidationError):
            ok.full_clean()
    with override_settings(AGORA_PROVIDER_KEY_VARS=["*"]):  # even "anything" never reaches SECRET_KEY
        ok.api_key_env = "SECRET_KEY"
        with pytest.raises(ValidationError):
            ok.full_clean()


@pytest.mark.django_db
def test_the_admin_refuses_a_secret_and_says_why(superuser):
    admin = client_for(superuser)
    form = {"name": "evil", "base_url": "https://attacker.example/v1", "default_model": "m"}
    form |= {"concurrency": "4", "timeout": "120", "api_key_env": "SECRET_KEY"}
    response = admin.post("/admin/debates/provider/add/", form)
    assert response.status_code == 200 and not Provider.objects.exists()
    assert "AGORA_PROVIDER_KEY_VARS" in response.content.decode()
    page = admin.get("/admin/debates/provider/add/").content.decode()
    assert "SECRET_KEY" in page and "*_API_KEY" in page, "the help text says what may be named"


@pytest.mark.django_db(transaction=True)
async def test_a_provider_row_naming_a_secret_sends_nothing(fast_llm, libraries, alice, monkeypatch, settings):
    """A row written before the rule (or straight into the database) must not leak either."""
    settings.SECRET_KEY = "the-real-secret-key-of-this-server-0123456789"
    monkeypatch.setenv("SECRET_KEY", settings.SECRET_KEY)
    monkeypatch.setenv("LEAKY_API_KEY", settings.SECRET_KEY)  # an allowed name holding the secret's value
    for name, variable in (("evil", "SECRET_KEY"), ("sneaky", "LEAKY_API_KEY")):
        provider = await Provider.objects.acreate(
            name=name, base_url=fast_llm.base_url, default_model="m", api_key_env=variable
        )
        debate = await Debate.objects.acreate(owner=alice, question="念佛与参禅？", format="duel", provider=provider)
        await runner.execute(debate.pk)
        await debate.arefresh_from_db()
        assert debate.status == "failed", (variable, debate.status)
        assert variable in debate.status_detail and "AGORA_PROVIDER_KEY_VARS" in debate.status_detail
    secret = hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest()
    assert all(r.bearer_sha256 != secret for r in fast_llm.requests)
    assert not fast_llm.chat_requests, "no request went out at all"


# -- 2. the per-user running limit holds on every path and under concurrency ----------------------------


@override_settings(AGORA_MAX_RUNNING_PER_USER=1)
def test_the_checkpoint_continue_counts_against_the_limit(db, alice, no_runs):
    make_debate(alice, "Already running?", status="running")
    waiting = make_debate(alice, "At the checkpoint?", status="waiting", fmt="roundtable")
    response = client_for(alice).post(f"/debates/{waiting.pk}/checkpoint/", {"addition": "a fact"}, follow=True)
    assert "You already have 1 debate running" in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == "waiting" and waiting.checkpoint_reply is None and no_runs == []


@override_settings(AGORA_MAX_RUNNING_PER_USER=1)
def test_retry_counts_against_the_limit(db, alice, no_runs):
    make_debate(alice, "Already running?", status="running")
    failed = make_debate(alice, "Failed earlier?")
    turn = failed.turns.get()
    response = client_for(alice).post(f"/debates/{failed.pk}/turns/{turn.pk}/retry/", follow=True)
    assert "You already have 1 debate running" in response.content.decode()
    failed.refresh_from_db()
    assert failed.status == "failed" and no_runs == []


def _parallel_posts(server: AgoraServer, count: int) -> list[int]:
    """`count` start-form posts by alice, released at the same instant from `count` threads."""
    browser = Browser(server.url)
    browser.log_in("alice", USERS["alice"])
    opener = browser.follow
    form = {"csrfmiddlewaretoken": browser.token("/debates/new/"), "topic": "念佛与参禅？", "format": "duel"}
    data = urllib.parse.urlencode(form).encode()
    barrier = threading.Barrier(count)
    statuses: list[int] = []

    def post():
        barrier.wait()
        request = urllib.request.Request(server.url + "/debates/new/", data=data, headers={"Referer": server.url})
        with opener.open(request, timeout=30) as response:
            statuses.append(response.status)

    threads = [threading.Thread(target=post) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses


def _active_debates(server: AgoraServer, database_url: str) -> int:
    code = (
        "from debates.models import ACTIVE_STATUSES, Debate;"
        "print(Debate.objects.filter(owner__username='alice', status__in=ACTIVE_STATUSES).count(),"
        " Debate.objects.count())"
    )
    out = (
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env={**server.env, "DATABASE_URL": database_url},
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.splitlines()[-1]
        .split()
    )
    return int(out[0]), int(out[1])


def _limit_under_concurrency(tmp_path, fake_llm, **server_args) -> tuple[int, int]:
    fake_llm.token_delay = 0.2  # every debate stays running while the posts race
    server = AgoraServer(tmp_path, fake_llm.base_url, AGORA_MAX_RUNNING_PER_USER="3", **server_args).start()
    try:
        statuses = _parallel_posts(server, 10)
        assert statuses == [200] * 10, server.log()  # started ones redirect to their page, refused re-render
        database_url = server.env["DATABASE_URL"]
        return _active_debates(server, database_url)
    finally:
        server.stop()


def test_ten_parallel_starts_respect_a_limit_of_three_on_sqlite(tmp_path, template_db, fake_llm):
    running, total = _limit_under_concurrency(tmp_path, fake_llm, template_db=template_db)
    assert (running, total) == (3, 3)


@pytest.mark.slow
def test_ten_parallel_starts_respect_a_limit_of_three_on_postgresql(tmp_path, fake_llm):
    admin, name, url = postgres_database()
    try:
        prepare_database(url, dict(os.environ))
        running, total = _limit_under_concurrency(tmp_path, fake_llm, database_url=url)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    assert (running, total) == (3, 3)


# -- 3 and 4. seeing and controlling other people's debates takes a permission --------------------------


def test_staff_without_the_permission_sees_only_their_own(db, alice, staff, no_runs):
    debate = make_debate(alice)
    ownerless = make_debate(None, "A terminal question?")
    viewer = client_for(staff)
    for pk in (debate.pk, ownerless.pk):
        assert viewer.get(f"/debates/{pk}/").status_code == 404
        assert viewer.get(f"/debates/{pk}/export.json").status_code == 404
        assert viewer.post(f"/debates/{pk}/share/", {"shared": "1"}).status_code == 404
    home = viewer.get("/").content.decode()
    assert "A private question about tea?" not in home and "A terminal question?" not in home
    debate.refresh_from_db()
    assert not debate.shared

    allowed = client_for(grant(staff))
    assert allowed.get(f"/debates/{debate.pk}/").status_code == 200
    assert "A private question about tea?" in allowed.get("/").content.decode()
    # Seeing everything is not owning: sharing someone else's debate stays the owner's call.
    assert allowed.post(f"/debates/{debate.pk}/share/", {"shared": "1"}).status_code == 404


def test_nobody_without_the_permission_controls_an_ownerless_debate(db, alice, staff, no_runs):
    ownerless = make_debate(None, "Started at the terminal?", status="running")
    for client in (client_for(), client_for(alice), client_for(staff)):
        for action in ("stop", "resume", "share"):
            response = client.post(f"/debates/{ownerless.pk}/{action}/", {"shared": "1"})
            assert response.status_code == 404, (action, response.status_code)
    ownerless.refresh_from_db()
    assert ownerless.status == "running" and not ownerless.stop_requested and not ownerless.shared

    operator = client_for(grant(staff))
    assert operator.post(f"/debates/{ownerless.pk}/stop/").status_code == 302
    ownerless.refresh_from_db()
    assert ownerless.stop_requested


# -- 5. WebSockets per user and per debate are capped -----------------------------------------------------


async def _socket(path: str, user=None) -> WebsocketCommunicator:
    headers = [ORIGIN]
    if user is not None:
        client = Client()
        await sync_to_async(client.force_login)(user)
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def _closed_with(communicator: WebsocketCommunicator, wait: float = 0.5) -> int | None:
    """The close code if the server closes the socket within `wait` s, else None; frames that
    arrive meanwhile (the catch-up) are read and dropped."""
    while not await communicator.receive_nothing(timeout=wait):
        message = await communicator.receive_output()
        if message["type"] == "websocket.close":
            return message.get("code")
    return None


@pytest.mark.django_db(transaction=True)
@override_settings(AGORA_WS_PER_USER=2, AGORA_WS_PER_DEBATE=3)
async def test_websockets_are_capped_per_user_and_per_debate(alice):
    debate = await sync_to_async(make_debate)(alice, status="running", shared=True)
    path = f"/ws/debates/{debate.pk}/"
    own = [await _socket(path, alice) for _ in range(3)]
    results = []
    for communicator in own:
        connected, _ = await communicator.connect(timeout=5)
        results.append((connected, await _closed_with(communicator)))
    assert results[:2] == [(True, None), (True, None)]
    assert results[2] == (True, 4429), "the third socket of one user is refused with a code the page explains"

    # Anonymous viewers of the share link count against the debate's cap (and their address's).
    shared = await _socket(f"{path}?share={debate.share_token}")
    assert (await shared.connect(timeout=5))[0] and await _closed_with(shared) is None  # 3 open now
    crowd = await _socket(f"{path}?share={debate.share_token}")
    await crowd.connect(timeout=5)
    assert await _closed_with(crowd) == 4429

    await own[0].disconnect()  # a slot frees when a socket closes
    again = await _socket(path, alice)
    await again.connect(timeout=5)
    assert await _closed_with(again) is None
    for communicator in (own[1], shared, again):
        await communicator.disconnect()


# -- 6. stop sharing closes the share link's sockets; sharing again makes a new link --------------------


@pytest.mark.django_db(transaction=True)
async def test_revoking_a_share_closes_its_sockets_and_a_new_share_is_a_new_link(alice, bob, no_runs):
    debate = await sync_to_async(make_debate)(alice, status="running")
    owner = await sync_to_async(client_for)(alice)
    await sync_to_async(owner.post)(f"/debates/{debate.pk}/share/", {"shared": "1"})
    await debate.arefresh_from_db()
    old_token = debate.share_token
    path = f"/ws/debates/{debate.pk}/"
    watcher = await _socket(f"{path}?share={old_token}", bob)
    owner_socket = await _socket(path, alice)
    for communicator in (watcher, owner_socket):
        assert (await communicator.connect(timeout=5))[0]
        await _closed_with(communicator)  # drain the catch-up

    await sync_to_async(owner.post)(f"/debates/{debate.pk}/share/", {"shared": "0"})
    assert await _closed_with(watcher) == 4403, "the share link's socket closes at once"
    assert await _closed_with(owner_socket) is None, "the owner's own socket stays"
    await owner_socket.disconnect()

    await sync_to_async(owner.post)(f"/debates/{debate.pk}/share/", {"shared": "1"})
    await debate.arefresh_from_db()
    assert debate.shared and debate.share_token != old_token
    stale = await sync_to_async(client_for)(bob)
    assert (await sync_to_async(stale.get)(f"/debates/{debate.pk}/?share={old_token}")).status_code == 404
    fresh = await sync_to_async(stale.get)(f"/debates/{debate.pk}/?share={debate.share_token}")
    assert fresh.status_code == 200


@pytest.mark.django_db
def test_a_session_grant_dies_with_its_link(alice, bob, no_runs):
    debate = make_debate(alice)
    owner, viewer = client_for(alice), client_for(bob)
    owner.post(f"/debates/{debate.pk}/share/", {"shared": "1"})
    debate.refresh_from_db()
    assert viewer.get(f"/debates/{debate.pk}/?share={debate.share_token}").status_code == 200
    owner.post(f"/debates/{debate.pk}/share/", {"shared": "0"})
    owner.post(f"/debates/{debate.pk}/share/", {"shared": "1"})
    # The viewer's session remembered the old link; the new link is not theirs until they get it.
    assert viewer.get(f"/debates/{debate.pk}/").status_code == 404


# -- 7. a reply has an app-side ceiling, whatever the server does with max_tokens -----------------------


async def test_a_reply_is_cut_at_a_ceiling_derived_from_max_tokens(harness):  # noqa: F811 - the imported fixture
    # Ordinary text that never loops, so the ceiling, not the repetition cut, is what stops it.
    harness.server.script = lambda body: default_reply(body) + prose(25000)
    harness.server.inject(Fault.flood(20000), times=None)
    spec = duel_spec(seats=(HUINENG, YINGUANG), options=DuelOptions(rounds=1, max_tokens={"speech": 60, "close": 80}))
    run = await harness.run(spec)
    assert run.outcome == "done"
    for key, turn in run.turns().items():
        limit = 80 if key == "duel:close" else 60
        assert estimate_tokens(turn.text) <= 3 * limit, (key, len(turn.text))
        assert turn.data.get("reply_capped") is True, key
        assert turn.text.endswith(CAPPED_MARK[spec.language]), key  # the debate's language only
    assert "reply_capped" in run.warning_codes
    assert all(len(r.tokens) < 20000 for r in run.requests), "the stream was abandoned, not drained"


# -- 8. a turn has a wall-clock deadline -------------------------------------------------------------------


async def test_a_turn_that_streams_nothing_fails_at_its_deadline(harness):  # noqa: F811 - the imported fixture
    harness.server.inject(Fault.trickle(0.05), times=None)
    spec = duel_spec(seats=(HUINENG, YINGUANG), options=DuelOptions(rounds=1), turn_deadline=0.6)
    started = time.monotonic()
    run = await asyncio.wait_for(harness.run(spec), 30)
    elapsed = time.monotonic() - started
    assert run.outcome == "failed" and elapsed < 5, elapsed
    failed = run.sink.of(ev.TurnFailed)
    assert len(failed) == 1 and "0.6 s" in failed[0].error, failed
    status = run.sink.of(ev.Status)[-1]
    assert status.status == "failed" and "Retry" in status.detail


@pytest.mark.django_db
def test_the_deadline_comes_from_settings(alice, libraries, settings):
    settings.AGORA_TURN_DEADLINE = 42.0
    debate = make_debate(alice)
    assert specs.debate_spec(debate).turn_deadline == 42.0


# -- 9. a library's own max_rounds --------------------------------------------------------------------------


@pytest.fixture
def short_library(db, libraries):
    library = Library.objects.create(slug="short-duels", name="Short", format="duel", protocol={"max_rounds": 2})
    for slug, name in (("short-a", "甲"), ("short-b", "乙")):
        Persona.objects.create(library=library, slug=slug, name=name, tradition=slug, keywords=["短"])
    return library


def test_the_form_uses_the_chosen_personas_library_maximum(short_library, alice, no_runs):
    form = {"topic": "短辩一场？", "format": "duel", "personas": ["short-a", "short-b"], "rounds": "8"}
    response = client_for(alice).post("/debates/new/", form)
    assert response.status_code == 200 and not Debate.objects.exists()
    assert response.context["form"].errors["rounds"] == ["At most 2 rounds in this library."]


def test_the_engine_uses_the_seated_library_protocol(short_library, alice):
    debate = Debate.objects.create(owner=alice, question="短辩一场？", format="duel", options={"rounds": 8})
    for order, slug in enumerate(("short-a", "short-b")):
        Seat.objects.create(debate=debate, persona=Persona.objects.get(slug=slug), order=order)
    spec = specs.debate_spec(debate)
    assert spec.library.protocol.get("max_rounds") == 2


# -- 10. exports carry neither raw HTML, script links nor invisible characters --------------------------


HOSTILE = (
    "Intro <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n"
    "[click](javascript:alert(3)) [ref][r] [enc](jav&#x61;script:alert(4))\n\n"
    "[r]: javascript:alert(5)\n\n"
    "A \u202egnirts\u202c with \u200bzero\u2066width\u2069 and `<code>` kept.\n\n"
    "```\n<b>in a fence</b>\n```\n"
)


@pytest.mark.django_db
def test_exports_are_inert(alice):
    debate = make_debate(alice, "Question \u202eevil\u202c?", status="done")
    Report.objects.create(debate=debate, verdict_markdown=HOSTILE, transcript_markdown=HOSTILE, data={"x": HOSTILE})
    Turn.objects.filter(debate=debate).update(text=HOSTILE, state="done")
    owner = client_for(alice)
    markdown = owner.get(f"/debates/{debate.pk}/export.md").content.decode()
    exported = owner.get(f"/debates/{debate.pk}/export.json").content.decode()
    for text in (markdown, exported):
        assert not FORBIDDEN_CHARS.search(text), "invisible controls are stripped"
    assert "<script" not in markdown and "<img" not in markdown and "<b>" not in markdown.split("```")[0]
    assert "javascript:" not in markdown.lower() and "jav&#x61;script" not in markdown
    assert "&lt;script>" in markdown, "raw HTML is shown as text, as the pages do"
    assert "`<code>`" in markdown and "```\n<b>in a fence</b>\n```" in markdown, "code stays code"
    assert json.loads(exported)["turns"][0]["text"].startswith("Intro <script>"), "JSON is data, kept verbatim"


# -- 11. internal provider URLs are for staff -------------------------------------------------------------


@pytest.mark.django_db
def test_errors_name_the_provider_url_to_staff_only(alice, superuser):
    url = "http://10.1.2.3:8000/v1"
    debate = make_debate(alice, status="failed", status_detail=f"A: cannot reach {url}: is the server running?")
    debate.turns.update(error=f"cannot reach {url}: is the server running?")
    owner = client_for(alice)
    for path in ("/", "report/", "export.json", "export.md"):
        response = owner.get(f"/debates/{debate.pk}/{path}" if path != "/" else f"/debates/{debate.pk}/")
        assert "10.1.2.3" not in response.content.decode(), path
    page = owner.get(f"/debates/{debate.pk}/").content.decode()
    assert "cannot reach the provider" in page, "the reason stays, only the address goes"
    assert url in client_for(superuser).get(f"/debates/{debate.pk}/").content.decode()


# -- 12. production settings: CSP, HSTS, SSL redirect, check --deploy clean -------------------------------


@pytest.mark.django_db
def test_every_page_sends_a_content_security_policy_without_inline_script(alice):
    response = client_for(alice).get("/")
    policy = response.headers.get("Content-Security-Policy", "")
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy.split("style-src")[0], policy
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    html = response.content.decode()
    assert " onchange=" not in html and " onclick=" not in html


PRODUCTION_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnop",
    "ALLOWED_HOSTS": "agora.example.org",
    "CSRF_TRUSTED_ORIGINS": "https://agora.example.org",
    "BEHIND_HTTPS_PROXY": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "AGORA_KEY_ENCRYPTION_KEY": "another-long-random-value-for-the-stored-provider-keys-0123456789",
}


def test_check_deploy_is_clean_in_production_configuration():
    documented = (ROOT / "docs" / "production.md").read_text()
    for name in PRODUCTION_ENV:
        assert f"`{name}" in documented, f"docs/production.md lists {name}"
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**os.environ, **PRODUCTION_ENV},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.django_db
def test_behind_the_proxy_http_redirects_and_hsts_is_sent():
    code = (
        "from django.conf import settings as s;"
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.SECURE_REDIRECT_EXEMPT)"
    )
    out = (
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env={**os.environ, **PRODUCTION_ENV},
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.splitlines()[-1]
        .split(maxsplit=3)
    )
    assert out[0] == "True" and int(out[1]) >= 31536000 and out[2] == "True"
    assert "healthz" in out[3], "load balancers probe /healthz over plain HTTP"


def test_the_security_model_is_documented():
    text = (ROOT / "docs" / "production.md").read_text()
    assert "## Security model" in text
    for needle in ("view_all_debates", "AGORA_PROVIDER_KEY_VARS", "AGORA_WS_PER_USER", "AGORA_TURN_DEADLINE"):
        assert needle in text, needle
