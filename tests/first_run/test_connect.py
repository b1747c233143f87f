"""A real model in two minutes: the "Connect a model" page (a real call to a real loopback server
that wants the key), the key encrypted at rest with a key that is not SECRET_KEY, sent only to its
own host, rotated with a command; the start form and the home page say what the bundled model is."""

from __future__ import annotations

import os
import re
import stat
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import translation

from debates import clients, key_vault
from debates.models import Provider
from debates.providers.base import ProviderUnavailable
from testkit.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db

KEY = "sk-connect-SECRET-9876543210fedcba"
NEEDLES = (KEY, KEY.removeprefix("sk-"), "SECRET-9876543210fedcba", "9876543210fedcba")


@pytest.fixture(autouse=True)
def vault_key(settings, tmp_path):
    settings.AGORA_KEY_ENCRYPTION_KEY = "test-encryption-key-not-the-secret-key"
    settings.AGORA_KEY_ENCRYPTION_KEY_FALLBACKS = []
    settings.AGORA_KEY_ENCRYPTION_KEY_FILE = str(tmp_path / "generated.key")
    settings.OPENAI_BASE_URL = ""  # the bundled model is the default, as on a fresh clone
    settings.AGORA_LOCAL_MODEL = ""


@pytest.fixture(scope="module")
def keyed():
    with FakeOpenAIServer(api_key=KEY, models=["fake-chat", "fake-large"]) as server:
        yield server


def client_for(user) -> Client:
    client = Client(headers={"accept-language": "en"})
    client.force_login(user)
    return client


def connect(client, url: str, key: str = KEY, **kwargs):
    return client.post("/connect/", {"service": "other", "base_url": url, "api_key": key}, **kwargs)


def leaks(text: str) -> list[str]:
    return [n for n in NEEDLES if n in text]


# -- the vault ----------------------------------------------------------------------------------------


def test_a_sealed_key_opens_with_its_host_and_not_with_secret_key(settings):
    sealed = key_vault.seal(KEY, "https://api.deepseek.com:443")
    assert not leaks(sealed)
    assert key_vault.open_sealed(sealed) == (KEY, "https://api.deepseek.com:443")
    settings.SECRET_KEY = "a-new-secret-key-changes-nothing-here"
    assert key_vault.open_sealed(sealed)[0] == KEY  # not derived from SECRET_KEY
    old = settings.AGORA_KEY_ENCRYPTION_KEY
    settings.AGORA_KEY_ENCRYPTION_KEY = "a-new-encryption-key"
    with pytest.raises(key_vault.VaultError):
        key_vault.open_sealed(sealed)
    settings.AGORA_KEY_ENCRYPTION_KEY_FALLBACKS = [old]
    assert key_vault.open_sealed(sealed)[0] == KEY  # MultiFernet: the old key still opens it


def test_without_the_setting_a_key_is_generated_once_into_a_private_file(settings, tmp_path, monkeypatch):
    settings.AGORA_KEY_ENCRYPTION_KEY = ""
    sealed = key_vault.seal(KEY, "h")
    path = tmp_path / "generated.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    made = path.read_text()
    assert key_vault.open_sealed(sealed)[0] == KEY and path.read_text() == made  # read, not made again
    settings.AGORA_KEY_ENCRYPTION_KEY_FILE = ""
    monkeypatch.setitem(settings.DATABASES["default"], "NAME", str(tmp_path / "db.sqlite3"))
    assert key_vault.key_file() == tmp_path / "db.sqlite3.keys"  # beside the database


def test_rotation_reseals_every_key_with_the_new_one(settings):
    provider = Provider.objects.create(
        name="p", base_url="https://h.example/v1", api_key_sealed=key_vault.seal(KEY, "https://h.example:443")
    )
    before = provider.api_key_sealed
    settings.AGORA_KEY_ENCRYPTION_KEY = "the-new-one"
    with pytest.raises(CommandError):  # the old key is needed to open it
        call_command("rotate_provider_keys", stdout=StringIO())
    out = StringIO()
    call_command("rotate_provider_keys", "--old", "test-encryption-key-not-the-secret-key", stdout=out)
    provider.refresh_from_db()
    assert "1 stored key(s) re-encrypted" in out.getvalue() and provider.api_key_sealed != before
    assert key_vault.open_sealed(provider.api_key_sealed) == (KEY, "https://h.example:443")  # no fallback needed


def test_a_stored_key_goes_only_to_the_origin_it_was_entered_for(keyed):
    bound_to = key_vault.origin(keyed.base_url)
    provider = Provider.objects.create(
        name="p", base_url=keyed.base_url, default_model="fake-chat", api_key_sealed=key_vault.seal(KEY, bound_to)
    )
    assert async_to_sync(clients.provider_client(provider).list_models)() == ["fake-chat", "fake-large"]
    provider.base_url = keyed.base_url.replace("127.0.0.1", "localhost")  # re-pointed (admin, database)
    with translation.override("en"):  # the reason is said in the active language
        moved = clients.provider_client(provider)
    assert isinstance(moved, clients.RefusedClient) and f"entered for {bound_to}" in moved.reason
    with pytest.raises(ProviderUnavailable):
        async_to_sync(moved.ensure_ready)()
    # the origin is inside the sealed token: editing the row cannot re-bind it
    assert "127.0.0.1" not in provider.api_key_sealed


def test_the_encryption_key_is_checked(settings):
    settings.AGORA_KEY_ENCRYPTION_KEY = settings.SECRET_KEY
    assert "agora.E005" in {m.id for m in run_checks()}
    settings.AGORA_KEY_ENCRYPTION_KEY, settings.DEBUG = "", False
    assert "agora.W004" in {m.id for m in run_checks()}


# -- the page ------------------------------------------------------------------------------------------


def test_the_owner_connects_tests_and_picks_a_model(keyed, superuser, libraries):
    owner = client_for(superuser)
    page = owner.get("/connect/").content.decode()
    for service in ("OpenAI", "DeepSeek", "Qwen (DashScope)", "OpenRouter", "Ollama", "Another OpenAI-compatible"):
        assert service in page
    response = connect(owner, keyed.base_url)
    assert response.status_code == 302, response.content.decode()[:2000]
    provider = Provider.objects.get()
    assert response["Location"] == f"/connect/{provider.pk}/"
    assert provider.approved and provider.approved_by == superuser and provider.api_key_env == ""
    assert provider.offered_models == ["fake-chat", "fake-large"] and not leaks(provider.api_key_sealed)
    assert keyed.requests[-1].path == "/v1/models" and keyed.requests[-1].status == 200  # the real call, keyed
    page = owner.get(f"/connect/{provider.pk}/").content.decode()
    assert "key set, ends in …dcba" in page and not leaks(page)
    assert '<option value="fake-chat"' in page
    response = owner.post(f"/connect/{provider.pk}/", {"model": "fake-large"})
    assert response.status_code == 302 and response["Location"] == f"/debates/new/?provider={provider.pk}"
    provider.refresh_from_db()
    assert provider.default_model == "fake-large"
    start = owner.get(response["Location"]).content.decode()
    assert re.search(rf'<option value="{provider.pk}" selected>{provider.name} — fake-large</option>', start)


def test_a_refused_key_is_not_kept_nor_shown(keyed, superuser):
    owner = client_for(superuser)
    wrong = "sk-wrong-key-0000111122223333"
    response = connect(owner, keyed.base_url, key=wrong)
    page = response.content.decode()
    assert response.status_code == 422 and "The test failed" in page and "refused the API key" in page
    assert wrong not in page and "0000111122223333" not in page and not Provider.objects.exists()


def test_htmx_gets_the_form_back_or_a_client_redirect(keyed, superuser):
    owner = client_for(superuser)
    response = owner.post("/connect/", {"service": "deepseek", "api_key": ""}, headers={"hx-request": "true"})
    page = response.content.decode()
    assert (
        response.status_code == 200 and page.lstrip().startswith("<form") and "Paste the key DeepSeek gave you" in page
    )
    response = connect(owner, keyed.base_url, headers={"hx-request": "true"})
    assert response.status_code == 200 and response["HX-Redirect"].startswith("/connect/")


def test_staff_need_the_provider_permissions_and_their_provider_waits(keyed, alice, staff, django_user_model):
    from django.contrib.auth.models import Permission

    assert client_for(alice).get("/connect/").status_code == 403
    assert client_for(staff).get("/connect/").status_code == 403
    assert Client().get("/connect/").status_code == 302  # to the login page
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["add_provider", "change_provider"]))
    staff = django_user_model.objects.get(pk=staff.pk)
    # This server is on loopback: that takes one more permission (the owner has it).
    response = connect(client_for(staff), keyed.base_url)
    assert response.status_code == 422 and "loopback or private address" in response.content.decode()
    staff.user_permissions.add(Permission.objects.get(codename="use_private_provider_addresses"))
    staff = django_user_model.objects.get(pk=staff.pk)
    assert connect(client_for(staff), keyed.base_url).status_code == 302
    assert not Provider.objects.get().approved  # as in the admin: a superuser approves it


def test_connecting_again_replaces_the_key_of_that_server(keyed, superuser):
    owner = client_for(superuser)
    connect(owner, keyed.base_url)
    first = Provider.objects.get().api_key_sealed
    connect(owner, keyed.base_url)
    assert Provider.objects.count() == 1 and Provider.objects.get().api_key_sealed != first


# -- what the bundled model is called ----------------------------------------------------------------------


def test_the_start_form_names_the_bundled_model_as_a_demo(alice, superuser, libraries):
    page = client_for(alice).get("/debates/new/").content.decode()
    assert "bundled local model — Qwen2.5-Coder 1.5B, a demo" in page and "default (environment)" not in page
    assert "/connect/" not in page  # alice may not connect one: she is told to ask
    assert "ask this Agora" in page and "owner to connect a real model" in page
    owner_page = client_for(superuser).get("/debates/new/").content.decode()
    assert 'href="/connect/"' in owner_page


def test_the_home_page_says_what_the_bundled_model_is_for(superuser):
    page = client_for(superuser).get("/").content.decode()
    assert "a small demo to see how Agora works" in page and 'class="connect-link"' in page


def test_the_start_form_names_the_servers_model(settings, alice, libraries):
    settings.OPENAI_BASE_URL, settings.AGORA_MODEL = "https://api.example.com/v1", "gpt-4.1"
    page = client_for(alice).get("/debates/new/").content.decode()
    assert "this server&#x27;s model — gpt-4.1" in page and "a small demo" not in page
