"""The owner's Provider admin: a name typed as a label, the models fetched before any default model
is set, Test and Fetch on the provider's own page; "Persona libraries" opens the libraries; a
stored key shows as its last four characters at most."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import translation

from debates import key_vault
from debates.forms import DebateForm
from debates.models import Provider
from testkit.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db
KEY = "sk-admin-SECRET-5555666677778888"


@pytest.fixture(autouse=True)
def vault_key(settings):
    settings.AGORA_KEY_ENCRYPTION_KEY = "admin-test-encryption-key"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(models=["m-one", "m-two"]) as made:
        yield made


def admin_client(user) -> Client:
    client = Client(headers={"accept-language": "en"})
    client.force_login(user)
    return client


def form(**values) -> dict:
    return {"name": "x", "base_url": "", "default_model": "", "concurrency": "4", "timeout": "120", **values}


def test_a_label_becomes_the_name_and_models_are_fetched_before_a_default_model(server, superuser):
    admin = admin_client(superuser)
    response = admin.post(
        "/admin/debates/provider/add/", form(name="DeepSeek chat", base_url=server.base_url, _fetch="1"), follow=True
    )
    provider = Provider.objects.get()
    assert provider.name == "deepseek-chat" and provider.default_model == ""
    assert response.redirect_chain[-1][0] == f"/admin/debates/provider/{provider.pk}/change/"
    assert provider.offered_models == ["m-one", "m-two"]
    shown = [str(m) for m in response.context["messages"]]
    assert any("2 models" in m for m in shown) and not any("default model" in m for m in shown), shown
    page = response.content.decode()
    assert 'name="_test"' in page and 'name="_fetch"' in page  # the buttons on its own page
    assert '<option value="m-two">' in page  # the default model field offers the fetched list


def test_the_test_button_on_the_change_page_asks_the_server(server, superuser):
    provider = Provider.objects.create(name="local", base_url=server.base_url)
    admin = admin_client(superuser)
    change = f"/admin/debates/provider/{provider.pk}/change/"
    response = admin.post(change, form(name="local", base_url=server.base_url, _test="1"), follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert any("local answers: 2 models" in m for m in shown), shown
    assert server.requests[-1].path == "/v1/models"


def test_a_label_without_latin_letters_or_a_taken_name_is_refused(superuser):
    Provider.objects.create(name="deepseek", base_url="https://api.deepseek.com/v1")
    admin = admin_client(superuser)
    page = admin.post("/admin/debates/provider/add/", form(name="深度求索", base_url="https://a.example/v1"))
    assert "Use some Latin letters or digits" in page.content.decode()
    page = admin.post("/admin/debates/provider/add/", form(name="DeepSeek", base_url="https://a.example/v1"))
    assert "is taken by another provider" in page.content.decode()


def test_the_stored_key_shows_as_its_tail_only(superuser):
    sealed = key_vault.seal(KEY, "https://api.example.com:443")
    provider = Provider.objects.create(name="p", base_url="https://api.example.com/v1", api_key_sealed=sealed)
    admin = admin_client(superuser)
    for url in ("/admin/debates/provider/", f"/admin/debates/provider/{provider.pk}/change/"):
        page = admin.get(url).content.decode()
        assert KEY not in page and "5555666677778888" not in page and sealed not in page
    assert "set, ends in …8888" in page
    # saving the page keeps the stored key (it is not a form field)
    admin.post(f"/admin/debates/provider/{provider.pk}/change/", form(name="p", base_url=provider.base_url))
    assert Provider.objects.get().api_key_sealed == sealed


def test_persona_libraries_opens_the_libraries(superuser):
    admin = admin_client(superuser)
    response = admin.get("/admin/personas/")
    assert response.status_code == 302 and response["Location"] == "/admin/personas/library/"
    assert 'href="/admin/personas/library/"' in admin.get("/").content.decode()  # the site's own link


def test_a_provider_without_a_default_model_needs_one_on_the_start_form(libraries):
    provider = Provider.objects.create(name="fresh", base_url="https://a.example/v1")
    values = {"topic": "Remote or office?", "format": "duel", "provider": provider.pk}
    bound = DebateForm(values)
    with translation.override("en"):  # the form's errors are in the active language
        assert not bound.is_valid() and "has no default model yet" in str(bound.errors.get("model"))
    assert DebateForm(values | {"model": "m-one"}).errors.get("model") is None
