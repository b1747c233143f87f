"""On the bundled local model each format's defaults are sized to end in about 5 minutes on 2
cores (`Format.local`): the start form fills what is left empty with the sizing, says so, and
keeps what a person sets; a remote model keeps the format's own defaults (issue 27.3)."""

from __future__ import annotations

import pytest
from django.test import Client

from debates.engine import registry
from debates.models import Debate

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs")]

QUESTIONS = {
    "duel": "念佛与参禅，哪条路更适合现代人修行？",
    "panel": "我们团队是否应该在明年全面转向远程办公？",
    "roundtable": "我们的客服产品要不要引入 RAG 知识库？",
    "moderated": "小公司应该先做产品还是先做销售？",
}
TABLES = {"moderated": ["steve-jobs", "charlie-munger", "socrates"]}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


def start(client, fmt: str, **fields):
    data = {"topic": QUESTIONS[fmt], "format": fmt, "personas": TABLES.get(fmt, []), **fields}
    if fmt == "roundtable":  # the confirm step first, then its roles
        import re

        html = client.post("/debates/new/", data).content.decode()
        data["personas"] = re.findall(r'name="personas" value="([^"]+)" id="[^"]+" checked', html)
    response = client.post("/debates/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return Debate.objects.get()


@pytest.mark.parametrize("fmt", list(QUESTIONS))
def test_the_bundled_model_gets_the_sized_defaults(client, settings, fmt):
    settings.OPENAI_BASE_URL = ""
    sizing = registry.get(fmt).local
    debate = start(client, fmt)
    for name, value in sizing.options.items():
        assert debate.options[name] == value
    assert debate.options["max_tokens"] == sizing.tokens
    for kind, tokens in sizing.tokens.items():
        assert tokens < registry.get(fmt).tokens[kind]  # shorter allowances than a remote model's


def test_the_roundtable_on_the_bundled_model_seats_the_quick_table(client, settings):
    settings.OPENAI_BASE_URL = ""
    debate = start(client, "roundtable")
    assert debate.options["mode"] == "quick" and debate.seats.count() == 3


@pytest.mark.parametrize("fmt", list(QUESTIONS))
def test_a_remote_model_keeps_the_formats_own_defaults(client, remote_default, fmt):
    debate = start(client, fmt)
    assert "max_tokens" not in debate.options
    for name in registry.get(fmt).local.options:
        assert name not in debate.options or fmt == "moderated" and name == "mode"


def test_what_a_person_sets_is_kept(client, settings):
    settings.OPENAI_BASE_URL = ""
    debate = start(client, "duel", rounds=3)
    assert debate.options["rounds"] == 3 and debate.options["max_tokens"] == registry.get("duel").local.tokens


def test_a_mode_the_question_picks_is_not_overridden(client, settings):
    settings.OPENAI_BASE_URL = ""
    sized = registry.get("roundtable").sized(
        registry.get("roundtable").Options(), "深入分析：" + QUESTIONS["roundtable"]
    )
    assert sized.mode == ""  # deep, from the question's words, as before


@pytest.mark.parametrize("fmt", list(QUESTIONS))
def test_the_form_says_the_defaults_are_sized_for_the_bundled_model(client, settings, fmt):
    settings.OPENAI_BASE_URL = ""
    html = client.get("/debates/new/", {"format": fmt}, **EN).content.decode()
    assert 'id="sized-note"' in html and "Sized for the bundled model" in html
    if "rounds" in registry.get(fmt).local.options:
        assert 'placeholder="default 1"' in html
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    assert 'id="sized-note"' not in client.get("/debates/new/", {"format": fmt}, **EN).content.decode()
