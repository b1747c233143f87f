"""The model connected with "Use this model" is the one that runs (issue 48, High): after /connect/,
a debate started with the defaults, from the start form, the JSON API, MCP or `manage.py debate`,
runs on the connected server (its request log), until the user chooses another; the banners on
Home and the start page name it. Choosing the environment's model stays possible everywhere."""

from __future__ import annotations

import io
import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import Client
from mcp import Client as MCPClient

from debates import runner
from debates.api import tokens
from debates.mcp import server
from debates.models import Debate, Provider
from testkit.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db

KEY = "sk-connected-default-0123456789abcdef"
QUESTION = "念佛与参禅，哪条路更适合现代人修行？"
DUEL = {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"]}


@pytest.fixture(autouse=True)
def fresh_clone(settings, tmp_path):
    """The bundled model is the environment's default, as on a fresh clone."""
    settings.AGORA_KEY_ENCRYPTION_KEY = "test-encryption-key-not-the-secret-key"
    settings.AGORA_KEY_ENCRYPTION_KEY_FALLBACKS = []
    settings.OPENAI_BASE_URL = ""
    settings.AGORA_LOCAL_MODEL = ""


@pytest.fixture(scope="module")
def server_module():
    with FakeOpenAIServer(api_key=KEY, models=["fake-chat", "fake-large"]) as fake:
        yield fake


@pytest.fixture
def connected_server(server_module):
    server_module.reset()
    yield server_module
    server_module.reset()


def client_for(user) -> Client:
    client = Client(headers={"accept-language": "en"})
    client.force_login(user)
    return client


def use_this_model(owner, url: str, model: str = "fake-large") -> Provider:
    """/connect/ as the owner clicks through it: the address and key, then "Use this model"."""
    response = owner.post("/connect/", {"service": "other", "base_url": url, "api_key": KEY})
    assert response.status_code == 302, response.content.decode()[:2000]
    provider = Provider.objects.get(base_url=url)
    assert owner.post(f"/connect/{provider.pk}/", {"model": model}).status_code == 302
    return provider


def chats(fake) -> list[str]:
    """The models the server was asked to speak with."""
    return [r.body.get("model") for r in fake.requests if r.path.endswith("/chat/completions")]


def selected_provider(page: str) -> str:
    select = re.search(r'<select name="provider".*?</select>', page, re.S)
    assert select, "the start form has a provider field"
    chosen = re.search(r'<option value="([^"]*)" selected>', select.group(0))
    return chosen.group(1) if chosen else ""


@pytest.mark.django_db(transaction=True)  # the runner reaches the database from its own threads
async def test_home_then_start_with_the_defaults_runs_on_the_connected_server(
    connected_server, superuser, libraries, no_runs
):
    def start_from_home() -> tuple[Provider, str, Debate]:
        owner = client_for(superuser)
        provider = use_this_model(owner, connected_server.base_url)
        page = owner.get("/debates/new/").content.decode()  # Home → Start a debate: no ?provider=
        # The form posted as the browser would: what the page selected, nothing changed.
        posted = {"topic": QUESTION, "format": "duel", "personas": DUEL["personas"]}
        response = owner.post("/debates/new/", {**posted, "provider": selected_provider(page)})
        assert response.status_code == 302, response.content.decode()[-3000:]
        return provider, page, Debate.objects.select_related("provider").get(pk=no_runs[-1])

    provider, page, debate = await sync_to_async(start_from_home)()
    assert selected_provider(page) == str(provider.pk)
    assert "Sized for the bundled model" not in page  # the connected model keeps the format's defaults
    assert debate.provider == provider and debate.model == ""
    assert await runner.execute(debate.pk) == "done"
    asked = chats(connected_server)
    assert asked and set(asked) == {"fake-large"}, asked


def test_the_bundled_model_is_still_one_choice_away(connected_server, superuser, libraries, no_runs):
    owner = client_for(superuser)
    use_this_model(owner, connected_server.base_url)
    response = owner.post(
        "/debates/new/", {"topic": QUESTION, "format": "duel", "personas": DUEL["personas"], "provider": ""}
    )
    assert response.status_code == 302
    assert Debate.objects.get(pk=no_runs[-1]).provider is None  # the environment's, as chosen


def test_the_api_starts_on_the_connected_model_unless_told_otherwise(
    connected_server, superuser, alice, libraries, no_runs
):
    provider = use_this_model(client_for(superuser), connected_server.base_url)
    _, token = tokens.issue(alice, "api")
    api = Client(headers={"authorization": f"Bearer {token}", "accept-language": "en"})
    for body, expected in ((DUEL, provider), ({**DUEL, "provider": ""}, None)):
        response = api.post("/api/v1/debates", body, content_type="application/json")
        assert response.status_code == 201, response.content.decode()
        assert Debate.objects.get(pk=response.json()["id"]).provider == expected, body


def test_the_cli_starts_on_the_connected_model_unless_told_otherwise(
    connected_server, superuser, libraries, monkeypatch
):
    provider = use_this_model(client_for(superuser), connected_server.base_url)

    async def not_run(pk, echo=None):
        return "done"

    monkeypatch.setattr("debates.runner.execute", not_run)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    base = [QUESTION, "--format", "duel", "--personas", "huineng,yinguang", "--search", "none"]
    call_command("debate", *base, stdout=io.StringIO())
    call_command("debate", *base, "--provider", "env", stdout=io.StringIO())
    assert [d.provider for d in Debate.objects.order_by("pk")] == [provider, None]


@pytest.mark.django_db(transaction=True)
async def test_mcp_starts_on_the_connected_model(connected_server, superuser, alice, libraries, no_runs):
    provider = await sync_to_async(lambda: use_this_model(client_for(superuser), connected_server.base_url))()
    _, token = await sync_to_async(tokens.issue)(alice, "mcp")
    async with MCPClient(server.build(token)) as client:
        started = await client.call_tool("start_debate", DUEL)
    assert not started.is_error, started.content[0].text
    debate = await Debate.objects.select_related("provider").aget(pk=json.loads(started.content[0].text)["id"])
    assert debate.provider == provider


@pytest.mark.parametrize("who", ["superuser", "alice"])
def test_the_banners_name_the_connected_model(connected_server, superuser, alice, libraries, who):
    use_this_model(client_for(superuser), connected_server.base_url)
    viewer = client_for(superuser if who == "superuser" else alice)
    for path in ("/", "/debates/new/"):
        page = viewer.get(path).content.decode()
        note = re.search(r'<p class="model-note" id="model-note">(.*?)</p>', page, re.S)
        assert note, path
        assert "fake-large" in note.group(1) and "a small demo" not in note.group(1), (path, note.group(1))


def test_without_a_connected_model_the_banner_still_names_the_bundled_one(superuser, libraries):
    page = client_for(superuser).get("/").content.decode()
    assert "Qwen2.5-Coder 1.5B" in page and "a small demo" in page


def test_the_owner_can_go_back_to_the_environments_model_and_choose_again(connected_server, superuser, libraries):
    """The way back from "Use this model": the provider list's actions (it could only be moved to
    another provider); the banner follows."""
    owner = client_for(superuser)
    provider = use_this_model(owner, connected_server.base_url)
    changelist = "/admin/debates/provider/"
    owner.post(changelist, {"action": "drop_default", "_selected_action": [provider.pk]})
    provider.refresh_from_db()
    assert not provider.is_default
    assert "a small demo" in owner.get("/").content.decode()  # the bundled model runs again
    owner.post(changelist, {"action": "make_default", "_selected_action": [provider.pk]})
    provider.refresh_from_db()
    assert provider.is_default and "fake-large" in owner.get("/").content.decode()
