"""Models a user can pick, not type: the admin tests a provider and fetches its models (the SDK's
`models.list()`), the start form offers them, and a local Ollama is found and offered."""

from __future__ import annotations

import re
import socket
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import translation

from debates.models import Provider
from debates.provider_tools import check_connection, detect_ollama, fetch_models
from testkit.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


@pytest.fixture(scope="module")
def ollama_like():
    """An OpenAI-compatible server with pulled models, on its own port (as Ollama would be)."""
    with FakeOpenAIServer(models=["qwen2.5:7b", "llama3.2:3b"]) as server:
        yield server


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_fetch_models_lists_and_stores_what_the_server_offers(ollama_like):
    provider = Provider.objects.create(name="local", base_url=ollama_like.base_url, default_model="qwen2.5:7b")
    outcome = fetch_models(provider)
    assert outcome.ok and outcome.models == ["llama3.2:3b", "qwen2.5:7b"]
    provider.refresh_from_db()
    assert provider.offered_models == ["llama3.2:3b", "qwen2.5:7b"] and provider.models_fetched_at
    assert "2 models" in outcome.message


def test_a_server_that_is_down_is_said_in_plain_words():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    provider = Provider.objects.create(name="gone", base_url=url, default_model="m", timeout=2)
    outcome = check_connection(provider)
    assert not outcome.ok and "cannot reach" in outcome.message and "is the server running?" in outcome.message


def test_a_default_model_the_server_lacks_is_pointed_out(ollama_like):
    provider = Provider.objects.create(name="local", base_url=ollama_like.base_url, default_model="gpt-9")
    assert "“gpt-9” is not among them" in fetch_models(provider).message


def test_the_admin_actions_and_the_start_form_offer_the_models(ollama_like, superuser, alice, libraries):
    provider = Provider.objects.create(name="local", base_url=ollama_like.base_url, default_model="qwen2.5:7b")
    admin = Client(HTTP_ACCEPT_LANGUAGE="en")
    admin.force_login(superuser)
    changelist = "/admin/debates/provider/"
    for action, expected in (("test_connection", "local answers: 2 models"), ("fetch_models", "2 models")):
        form = {"action": action, "_selected_action": [provider.pk], "index": 0, "select_across": 0}
        response = admin.post(changelist, form, follow=True)
        shown = [str(m) for m in response.context["messages"]]
        assert any(expected in m for m in shown), (action, shown)
    owner = Client()
    owner.force_login(alice)
    page = owner.get("/debates/new/").content.decode()
    options = re.findall(r'<option value="([^"]+)">local</option>', page)
    assert options == ["llama3.2:3b", "qwen2.5:7b"]


def test_a_local_ollama_is_detected_and_offered(ollama_like, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", ollama_like.base_url.removesuffix("/v1").removeprefix("http://"))
    out = StringIO()
    call_command("detect_providers", stdout=out)
    provider = Provider.objects.get(name="ollama")
    assert provider.base_url == ollama_like.base_url and provider.offered_models == ["llama3.2:3b", "qwen2.5:7b"]
    assert provider.default_model == "llama3.2:3b" and provider.api_key_env == ""
    assert "Ollama found" in out.getvalue()
    assert detect_ollama() == provider and Provider.objects.count() == 1, "found again, not added twice"


def test_no_ollama_is_quiet(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{closed_port()}")
    out = StringIO()
    call_command("detect_providers", stdout=out)
    assert not Provider.objects.exists() and "No Ollama at" in out.getvalue()
