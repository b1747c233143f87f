"""What staff with Provider or Search-provider rights can make the server fetch, and what of it
they (and every user) get to read (hardening round two, finding 6, and "a provider's raw error
text reaches ordinary users"): the default key goes only to its own host; admin checks say the
status and the kind of failure, never the reply; a provider that staff who are not superusers add
is offered to users only once a superuser approves it; a turn's error carries no server text.

A canary HTTP server on loopback stands for the internal service: it records every request's
`Authorization` and answers with a body holding a marker that must never be shown."""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from django.contrib.auth.models import Permission

from debates import runner
from debates.forms import form_for
from debates.models import Debate, Provider, SearchProvider
from testkit.fake_openai import Fault
from testkit.loopback import LoopbackServer
from tests.security.conftest import PLAIN_A, PLAIN_B, english_client

DEFAULT_KEY = "sk-canary-default-key-0123456789abcdef"
MARKER = "INTERNAL-ONLY-7f3a9c"  # what the internal service says; never on a page or in a message
PROVIDERS = "/admin/debates/provider/"


class Canary:
    """A loopback HTTP server answering every request with `answer` = (status, headers, body)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []  # (method, path, Authorization)
        self.answer: tuple[int, dict, bytes] = (500, {"Content-Type": "text/plain"}, MARKER.encode())
        canary = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                canary.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
                status, headers, body = canary.answer
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _reply

            def log_message(self, *args):
                pass

        self.server = LoopbackServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def answers(self, status: int, body, content_type: str = "application/json", **headers) -> None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answer = (status, {"Content-Type": content_type, **headers}, payload)

    def bearers(self) -> list[str]:
        return [auth for _m, _p, auth in self.seen if auth]

    def __enter__(self) -> Canary:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def canary():
    with Canary() as made:
        yield made


@pytest.fixture
def quick(settings):
    settings.AGORA_PROVIDER_RETRIES = 0
    settings.AGORA_PROVIDER_BACKOFF = 0.01


@pytest.fixture
def provider_staff(staff):
    """Staff holding every Provider and Search-provider permission, but no superuser."""
    codenames = [f"{verb}_{model}" for verb in ("add", "change", "view") for model in ("provider", "searchprovider")]
    staff.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return type(staff).objects.get(pk=staff.pk)


@pytest.fixture
def private_staff(provider_staff):
    """Provider staff who may also point providers at loopback and private addresses: only the
    stored key's origin stands between them and the key."""
    provider_staff.user_permissions.add(Permission.objects.get(codename="use_private_provider_addresses"))
    return type(provider_staff).objects.get(pk=provider_staff.pk)


def act(client, action: str, *rows, changelist: str = PROVIDERS) -> list[str]:
    """Run an admin action on `rows`; the messages it left."""
    response = client.post(changelist, {"action": action, "_selected_action": [row.pk for row in rows]})
    assert response.status_code == 302, response.content.decode()[:3000]
    return [str(message) for message in response.wsgi_request._messages._queued_messages]  # this request's


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the default key goes to its own host only -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_default_key_never_reaches_another_host(canary, quick, superuser, libraries, alice, monkeypatch, settings):
    monkeypatch.setenv("OPENAI_API_KEY", DEFAULT_KEY)
    monkeypatch.setenv("COPY_API_KEY", DEFAULT_KEY)  # the same key under an allowed name
    settings.OPENAI_BASE_URL = "https://llm.example.net/v1"
    canary.answers(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
    admin = english_client(superuser)

    # The admin refuses to point the default key at another host, and says what decides it.
    form = {"name": "canary", "base_url": canary.base_url, "default_model": "m", "concurrency": "1"}
    response = admin.post(f"{PROVIDERS}add/", form | {"timeout": "5", "api_key_env": "OPENAI_API_KEY"})
    assert response.status_code == 200 and not Provider.objects.exists()
    assert "OPENAI_API_KEY_HOSTS" in response.content.decode()

    # Rows written straight into the database (or before this rule) send nothing either: the
    # admin's checks, a debate, a regenerated turn's client all refuse before any request.
    rows = [
        Provider.objects.create(name=name, base_url=canary.base_url, default_model="m", api_key_env=variable)
        for name, variable in (("direct", "OPENAI_API_KEY"), ("copy", "COPY_API_KEY"))
    ]
    for action in ("test_connection", "fetch_models"):
        messages = act(admin, action, *rows)
        assert all("OPENAI_API_KEY_HOSTS" in m for m in messages), messages
    debate = Debate.objects.create(owner=alice, question="念佛与参禅？", format="duel", provider=rows[0])
    from asgiref.sync import async_to_sync

    assert async_to_sync(runner.execute)(debate.pk) == "failed"
    assert not canary.seen, canary.seen

    # The same checks with the key bound to this origin (OPENAI_API_KEY_HOSTS) do send it: the
    # canary would have seen it above.
    settings.OPENAI_API_KEY_HOSTS = [canary.base_url.removesuffix("/v1")]
    act(admin, "test_connection", rows[0])
    assert f"Bearer {DEFAULT_KEY}" in canary.bearers()


# -- admin checks: the status and the kind, never the reply ------------------------------------------------


REPLIES = [
    # (status, body, content type, what the message says instead)
    (500, {"error": {"message": f"db password is {MARKER}"}}, "application/json", "HTTP 500"),
    (401, {"error": {"message": f"token {MARKER} expired"}}, "application/json", "refused the API key"),
    (403, f"forbidden: {MARKER}".encode(), "text/plain", "HTTP 403"),
    (400, {"error": {"message": MARKER}}, "application/json", "HTTP 400"),
    (200, f"<html><title>{MARKER}</title></html>".encode(), "text/html", "OpenAI-compatible"),
    (200, {"data": [{"id": f"<b>{MARKER} and more words</b>"}]}, "application/json", "OpenAI-compatible"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("status", "body", "content_type", "said"), REPLIES)
def test_provider_checks_show_the_status_never_the_body(canary, quick, private_staff, status, body, content_type, said):
    canary.answers(status, body, content_type)
    provider = Provider.objects.create(name="internal", base_url=canary.base_url, default_model="m")
    admin = english_client(private_staff)
    messages = act(admin, "test_connection", provider) + act(admin, "fetch_models", provider)
    assert canary.seen, "the checks did reach the server"
    assert all(MARKER not in m for m in messages), messages
    assert all(said in m for m in messages), messages
    assert MARKER not in admin.get(PROVIDERS).content.decode()
    provider.refresh_from_db()
    assert provider.offered_models == []


@pytest.mark.django_db
def test_an_unreachable_provider_is_said_so(quick, private_staff):
    provider = Provider.objects.create(name="down", base_url=f"http://127.0.0.1:{closed_port()}/v1", default_model="m")
    messages = act(english_client(private_staff), "test_connection", provider)
    assert "cannot reach" in messages[0], messages


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "headers", "said"),
    [(500, {}, "HTTP 500"), (403, {}, "HTTP 403"), (302, {"Location": f"http://{MARKER}.internal/"}, "HTTP 302")],
)
def test_search_checks_show_the_status_never_the_body(canary, provider_staff, status, headers, said, caplog):
    canary.answers(status, {"error": {"message": MARKER}}, **headers)
    searx = SearchProvider.objects.create(name="internal", kind="searxng", base_url=canary.base_url[:-3])
    with caplog.at_level(logging.WARNING):
        (message,) = act(
            english_client(provider_staff), "test_search", searx, changelist="/admin/debates/searchprovider/"
        )
    assert canary.seen and said in message and MARKER not in message, message
    assert MARKER in caplog.text, "what the server said stays in the log"


# -- staff-made providers wait for a superuser ----------------------------------------------------------------


def start_form_errors(values: dict) -> dict:
    base = {"topic": "Which path suits a modern practitioner?", "format": "duel", "personas": [PLAIN_A, PLAIN_B]}
    form = form_for(base | values)
    form.is_valid()
    return {name: " ".join(str(m) for m in messages) for name, messages in form.errors.items()}


@pytest.mark.django_db(transaction=True)
def test_a_private_staff_add_is_offered_once_a_superuser_approves_it(
    canary, quick, private_staff, superuser, alice, plain_library
):
    canary.answers(200, {"object": "list", "data": [{"id": "loopback-only-model", "object": "model"}]})
    staff_admin, root_admin = english_client(private_staff), english_client(superuser)
    form = {"name": "internal", "base_url": canary.base_url, "default_model": "m", "concurrency": "1", "timeout": "5"}
    assert staff_admin.post(f"{PROVIDERS}add/", form).status_code == 302
    provider = Provider.objects.get(name="internal")
    assert not provider.approved

    (fetched,) = act(staff_admin, "fetch_models", provider)
    assert "loopback-only-model" in fetched and "once a superuser approves it" in fetched
    provider.refresh_from_db()
    assert provider.offered_models == ["loopback-only-model"]

    # Users see neither the provider nor its models, and choosing it says why.
    start_page = english_client(alice).get("/debates/new/").content.decode()
    assert "loopback-only-model" not in start_page and f'value="{provider.pk}"' not in start_page
    assert "superuser approves it" in start_form_errors({"provider": provider.pk})["provider"]
    seat_errors = start_form_errors({"seat_models": f"{PLAIN_A} = internal/m"})
    assert "superuser approves it" in seat_errors["seat_models"]
    # A debate that names it anyway (made before, or straight in the database) fails unsent.
    from asgiref.sync import async_to_sync

    debate = Debate.objects.create(owner=alice, question="念佛与参禅？", format="duel", provider=provider)
    asked = len(canary.seen)
    assert async_to_sync(runner.execute)(debate.pk) == "failed"
    debate.refresh_from_db()
    assert "approval" in debate.status_detail and len(canary.seen) == asked

    # Staff cannot approve it themselves; a superuser can.
    assert "Approve: offer to users" not in staff_admin.get(PROVIDERS).content.decode()
    staff_admin.post(PROVIDERS, {"action": "approve", "_selected_action": [provider.pk]})
    provider.refresh_from_db()
    assert not provider.approved
    act(root_admin, "approve", provider)
    provider.refresh_from_db()
    assert provider.approved and provider.approved_by == superuser
    start_page = english_client(alice).get("/debates/new/").content.decode()
    assert "loopback-only-model" in start_page

    # Re-pointed by staff, it waits again; a change elsewhere keeps the approval.
    change = f"{PROVIDERS}{provider.pk}/change/"
    assert staff_admin.post(change, form | {"timeout": "9"}).status_code == 302
    provider.refresh_from_db()
    assert provider.approved
    assert staff_admin.post(change, form | {"base_url": "http://127.0.0.2:9/v1"}).status_code == 302
    provider.refresh_from_db()
    assert not provider.approved and provider.approved_by is None


# -- a provider's error reaches users as its status and kind ------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_turn_error_says_the_status_not_the_servers_words(fast_llm, libraries, alice, caplog):
    from asgiref.sync import sync_to_async

    fast_llm.inject(Fault.server_error(400, f"context too long; upstream {MARKER} at 10.0.0.7"), times=None)
    debate = await Debate.objects.acreate(owner=alice, question="念佛与参禅？", format="duel")
    with caplog.at_level(logging.WARNING):
        assert await runner.execute(debate.pk) == "failed"
    turn = await debate.turns.afirst()
    assert "HTTP 400" in turn.error and MARKER not in turn.error, turn.error

    def pages() -> dict[str, str]:
        owner = english_client(alice)
        return {path: owner.get(f"/debates/{debate.pk}/{path}").content.decode() for path in ("", "export.json")}

    for path, text in (await sync_to_async(pages)()).items():
        assert "HTTP 400" in text and MARKER not in text, path
    assert MARKER in caplog.text, "the operator's log keeps what the server said"


# -- a stored key stays with the origin it was entered for (hardening round three) ----------------------------

KEY = "sk-origin-bound-key-0123456789abcdef"


@pytest.fixture
def vault(settings, tmp_path):
    settings.AGORA_KEY_ENCRYPTION_KEY = "test-encryption-key-not-the-secret-key"
    settings.AGORA_KEY_ENCRYPTION_KEY_FALLBACKS = []
    settings.AGORA_KEY_ENCRYPTION_KEY_FILE = str(tmp_path / "generated.key")


@pytest.mark.django_db(transaction=True)
def test_a_provider_moved_to_another_port_gets_no_key(vault, quick, superuser, private_staff, alice, libraries):
    from asgiref.sync import async_to_sync

    from testkit.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(api_key=KEY, models=["m"]) as keyed, FakeOpenAIServer(models=["m"]) as other:
        owner = english_client(superuser)
        form = {"service": "other", "base_url": keyed.base_url, "api_key": KEY}
        assert owner.post("/connect/", form).status_code == 302
        provider = Provider.objects.get()
        assert keyed.requests[-1].bearer_sha256, "the key did go to its own server"

        # Staff move it to another port of the same host and press "Test connection" and "Fetch models".
        staff_admin = english_client(private_staff)
        change = f"{PROVIDERS}{provider.pk}/change/"
        moved = {"name": provider.name, "base_url": other.base_url, "default_model": "m", "concurrency": "1"}
        response = staff_admin.post(change, moved | {"timeout": "5", "_test": "1"}, follow=True)
        assert not keyed_requests(other), "the key went to the other port"
        said = " ".join(str(m) for m in response.context["messages"])
        assert "enter it again" in said, said
        act(staff_admin, "test_connection", provider)
        act(staff_admin, "fetch_models", provider)
        # Approved again by the owner, a debate on it sends no key there either.
        act(owner, "approve", provider)
        provider.refresh_from_db()
        debate = Debate.objects.create(owner=alice, question="念佛与参禅？", format="duel", provider=provider)
        async_to_sync(runner.execute)(debate.pk)
        assert not keyed_requests(other), other.requests


def keyed_requests(server) -> list:
    """The requests that reached `server` carrying an Authorization header."""
    return [r for r in server.requests if "authorization" in r.headers]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "moved", ["https://127.0.0.1:{port}/v1", "http://127.0.0.1:{other}/v1", "http://localhost:{port}/v1"]
)
def test_a_sealed_key_opens_only_for_its_scheme_host_and_port(vault, moved):
    from django.utils import translation

    from debates import clients, key_vault

    provider = Provider(name="p", base_url="http://127.0.0.1:8001/v1", default_model="m")
    provider.api_key_sealed = key_vault.seal(KEY, key_vault.origin(provider.base_url))
    assert clients.provider_key(provider) == (KEY, "")
    provider.base_url = moved.format(port=8001, other=8002)
    with translation.override("en"):
        key, why = clients.provider_key(provider)
    assert key is None and "http://127.0.0.1:8001" in why, why


@pytest.mark.django_db
@pytest.mark.parametrize("moved", ["http://api.deepseek.com/v1", "https://api.deepseek.com:8443/v1"])
def test_a_key_variable_bound_to_a_host_goes_to_its_scheme_and_port_only(settings, monkeypatch, moved):
    from django.core.exceptions import ValidationError

    from debates import provider_keys

    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", DEFAULT_KEY)
    settings.AGORA_PROVIDER_KEY_VARS = ["DEEPSEEK_API_KEY@api.deepseek.com", "OPENAI_API_KEY"]
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY_HOSTS = "https://api.deepseek.com/v1", []
    for variable, key in (("DEEPSEEK_API_KEY", KEY), ("OPENAI_API_KEY", DEFAULT_KEY)):
        assert provider_keys.read(variable, "https://api.deepseek.com/v1") == (key, "")
        assert provider_keys.read(variable, moved)[0] is None, variable
        with pytest.raises(ValidationError):
            Provider(name="p", base_url=moved, default_model="m", api_key_env=variable).full_clean()
    # An origin written out binds a key to an http server on its own port.
    settings.AGORA_PROVIDER_KEY_VARS = ["DEEPSEEK_API_KEY@http://10.0.0.5:8000"]
    assert provider_keys.read("DEEPSEEK_API_KEY", "http://10.0.0.5:8000/v1") == (KEY, "")
    assert provider_keys.read("DEEPSEEK_API_KEY", "http://10.0.0.5:8001/v1")[0] is None


# -- loopback, private and metadata addresses take a permission (hardening round three) -----------------------


@pytest.mark.django_db
def test_provider_staff_cannot_point_a_provider_at_this_machine(canary, quick, provider_staff):
    canary.answers(200, {"object": "list", "data": [{"id": "root:x:0:0:root:/root:/bin/bash", "object": "model"}]})
    admin = english_client(provider_staff)
    form = {"name": "internal", "base_url": canary.base_url, "default_model": "m", "concurrency": "1", "timeout": "5"}
    response = admin.post(f"{PROVIDERS}add/", form)
    assert response.status_code == 200 and not Provider.objects.exists()
    assert "loopback or private address" in response.content.decode()
    # A row written straight into the database (or by someone allowed) is not tested for them either.
    provider = Provider.objects.create(name="internal", base_url=canary.base_url, default_model="m")
    for action in ("test_connection", "fetch_models"):
        (said,) = act(admin, action, provider)
        assert "loopback or private address" in said and "root:x" not in said, said
    # Nor is the Connect page a way round it (a port scanner: every answer differs).
    response = admin.post("/connect/", {"service": "other", "base_url": canary.base_url, "api_key": ""})
    page = response.content.decode()
    assert response.status_code == 422 and "loopback or private address" in page and "root:x" not in page
    assert not canary.seen, canary.seen


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/v1"])
def test_a_metadata_address_is_refused_even_to_the_owner(quick, superuser, url):
    response = english_client(superuser).post("/connect/", {"service": "other", "base_url": url, "api_key": ""})
    assert response.status_code == 422 and "cloud metadata" in response.content.decode()
    assert not Provider.objects.exists()


@pytest.mark.django_db
def test_a_provider_answering_with_a_redirect_is_not_followed(quick, superuser):
    with Canary() as front, Canary() as behind:
        front.answers(302, b"", "text/plain", Location=f"{behind.base_url}/models")
        response = english_client(superuser).post(
            "/connect/", {"service": "other", "base_url": front.base_url, "api_key": "sk-some-key-0123456789"}
        )
        page = response.content.decode()
        assert front.seen and not behind.seen, behind.seen
        assert response.status_code == 422 and "HTTP 302" in page, page[-3000:]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url, kept",
    [("http://127.0.0.1:8001/v1", True), ("https://127.0.0.1/v1", True), ("http://10.0.0.9:8001/v1", False)],
)
def test_a_key_sealed_with_its_host_alone_is_bound_to_the_rows_origin_on_upgrade(vault, url, kept):
    """Keys sealed before the origin binding named a host: the migration seals them again for the
    row's origin when the row is still on that host (nothing to enter again), and leaves a moved
    row's key sent nowhere."""
    import importlib
    import json

    from django.apps import apps

    from debates import clients, key_vault

    legacy = key_vault.box().encrypt(json.dumps({"key": KEY, "host": "127.0.0.1"}).encode()).decode()
    provider = Provider.objects.create(name="p", base_url=url, default_model="m", api_key_sealed=legacy)
    assert clients.provider_key(provider)[0] is None, "a host-only seal opens for no origin"
    importlib.import_module("debates.migrations.0030_rebind_host_keys").rebind(apps, None)
    provider.refresh_from_db()
    assert (clients.provider_key(provider)[0] == KEY) is kept
    if kept:
        assert key_vault.open_sealed(provider.api_key_sealed)[1] == key_vault.origin(url)
