"""L3 characters on the start form (issue 28, item 6; the roundtable seed's 人物蒸馏与持久化): the
question's 「和 XX、XX 讨论」 ("with X and Y") or "Add a character" names real people; Agora distils
each with the debate's model (the fake OpenAI server answers over real loopback HTTP), shows them to
confirm or edit, seats them as L3 and saves them to the library as distilled; a person no model
can distil is refused beside the field, with the reason. Imports are recorded external-import."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from html import unescape
from html.parser import HTMLParser

import pytest
from django.test import Client

from debates.engine import distill
from debates.engine import events as ev
from debates.engine.budget import Ledger
from debates.engine.debate import run_debate
from debates.engine.turns import ClientPool
from debates.models import Debate
from debates.specs import debate_spec
from personas.manifest.text import dump_manifest
from personas.models import Persona
from testkit.fake_llm import FakeLLM
from testkit.fake_openai import FakeOpenAIServer, Reply
from tests.web.formpage import errors_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs")]
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
QUESTION = "和巴菲特、霍珀讨论我们要不要做 AI 客服"
QUESTION_EN = "Discuss with Warren Buffett and Grace Hopper whether we should build AI customer service"

# What the scripted model knows of each person, in the form the distillation asks for.
PEOPLE = {
    "巴菲特": (
        "沃伦·巴菲特",
        "Warren Buffett",
        "价值投资者，伯克希尔·哈撒韦的掌舵人。",
        "Value investor who ran Berkshire Hathaway.",
    ),
    "霍珀": (
        "格蕾丝·霍珀",
        "Grace Hopper",
        "计算机先驱，早期编译器的作者。",
        "Computing pioneer who wrote early compilers.",
    ),
}
PEOPLE["Warren Buffett"], PEOPLE["Grace Hopper"] = PEOPLE["巴菲特"], PEOPLE["霍珀"]


def distilled(name: str, lang: str) -> str:
    zh_name, en_name, zh_line, en_line = PEOPLE[name]
    if lang == "en":
        return (
            f"Known: yes\nChinese name: {zh_name}\nEnglish name: {en_name}\nChinese description: {zh_line}\n"
            f"Description: {en_line}\nKeywords: moats, circle of competence\n"
            "Cognitive frame: Sees a business as something to own for decades; price is what you pay.\n"
            "Knowledge domain: Capital allocation, insurance float, valuing businesses, the annual letters.\n"
            "Decision preferences: Acts only inside the circle of competence; avoids permanent loss of capital.\n"
            "Adversarial rules: Asks what the business will look like in ten years and where its moat is.\n"
            "Expression style: Plain, folksy, with baseball and snowball metaphors.\n"
            "Sources: Berkshire Hathaway shareholder letters"
        )
    return (
        f"认识此人：是\n中文名：{zh_name}\n英文名：{en_name}\n中文简介：{zh_line}\n英文简介：{en_line}\n"
        "关键词：护城河、能力圈、安全边际\n"
        "认知框架：把生意看作要拥有几十年的东西；价格是你付出的，价值是你得到的。\n"
        "知识域：资本配置、保险浮存金、企业估值、历年致股东信。\n"
        "决策偏好：只在能力圈内行动，宁可错过也不冒永久损失本金的风险。\n"
        "对抗规则：追问十年后这门生意会是什么样子、护城河在哪里。\n"
        "表达风格：朴实幽默，爱用棒球和滚雪球的比喻。\n"
        "来源：《巴菲特致股东的信》、伯克希尔股东大会问答"
    )


def asked_of(body: dict) -> tuple[str, str] | None:
    """(the person, the language) when the request is a distillation, else None."""
    user = body["messages"][-1]["content"]
    found = re.search(r"^(?:人物：|Person: )(.+)$", user, re.MULTILINE)
    if not found or "distil" not in body["messages"][0]["content"] and "蒸馏" not in body["messages"][0]["content"]:
        return None
    return found.group(1).strip(), "en" if user.startswith("Person: ") else "zh"


def script(body: dict):
    asked = asked_of(body)
    return distilled(*asked) if asked else None


@pytest.fixture
def fake(settings):
    with FakeOpenAIServer(script=script) as server:
        settings.OPENAI_BASE_URL = server.base_url
        yield server


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def without_bundled_characters():
    """A library that lacks the two people (the bundled roundtable library ships both as L3)."""
    Persona.objects.filter(slug__in=["warren-buffett", "grace-hopper"]).delete()


class _FormData(HTMLParser):
    """What a browser posts from the start form as the page shows it (checked boxes, filled fields)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: list[tuple[str, str]] = []
        self.inside = False
        self.textarea: tuple[str, list[str]] | None = None
        self.select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and a.get("id") == "start-form":
            self.inside = True
        if not self.inside or not a.get("name") and tag != "option":
            return
        if tag == "input":
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in a or kind in ("file", "submit"):
                return
            self.data.append((a["name"], unescape(a.get("value") or ("on" if kind == "checkbox" else ""))))
        elif tag == "textarea":
            self.textarea = (a["name"], [])
        elif tag == "select":
            self.select = a["name"]
        elif tag == "option" and self.select and "selected" in a:
            self.data.append((self.select, unescape(a.get("value", ""))))

    def handle_data(self, data):
        if self.textarea:
            self.textarea[1].append(data)

    def handle_endtag(self, tag):
        if tag == "textarea" and self.textarea:
            value = "".join(self.textarea[1])
            self.data.append((self.textarea[0], value[1:] if value.startswith("\n") else value))
            self.textarea = None
        elif tag == "select":
            self.select = None
        elif tag == "form":
            self.inside = False


def posted(html: str, **changes) -> dict[str, list[str]]:
    parser = _FormData()
    parser.feed(html)
    data: dict[str, list[str]] = {}
    for name, value in parser.data:
        data.setdefault(name, []).append(value)
    data.pop("csrfmiddlewaretoken", None)
    for name, value in changes.items():
        data[name.replace("__", "-")] = value if isinstance(value, list) else [value]
    return data


def seated(debate: Debate) -> list[Persona]:
    return [s.persona for s in debate.seats.select_related("persona").order_by("order")]


# -- the acceptance --------------------------------------------------------------------------------------


def test_named_in_the_question_distilled_confirmed_seated_as_l3_and_in_the_admin(
    client, fake, alice, without_bundled_characters, no_runs, admin_client
):
    first = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable"}, **EN)
    html = first.content.decode()
    assert first.status_code == 200 and not Debate.objects.exists() and no_runs == []
    # One distillation call per person, in the question's language, naming nobody else and no question.
    asked = [asked_of(r.body) for r in fake.requests]
    assert asked == [("巴菲特", "zh"), ("霍珀", "zh")]
    assert all("AI 客服" not in m["content"] for r in fake.requests for m in r.body["messages"])
    # Shown to confirm, nothing saved yet.
    notice = html.split('id="start-notice"')[1].split("</div>")[0]
    assert "Confirm the table" in notice and "Agora distilled the people you named" in notice
    assert 'value="沃伦·巴菲特"' in html and 'value="格蕾丝·霍珀"' in html
    assert not Persona.objects.filter(source=Persona.Source.DISTILLED).exists()

    # The user edits one line of Buffett before starting.
    data = posted(html, character__0__expression_style="说话像在股东大会上回答提问，朴实而幽默。")
    second = client.post("/debates/new/", data, **EN)
    assert second.status_code == 302, errors_in(second.content.decode(), "start-form")
    assert len(fake.requests) == 2  # confirmed drafts are not distilled again
    debate = Debate.objects.get()
    table = seated(debate)
    characters = [p for p in table if p.tier == Persona.Tier.CHARACTER]
    assert [p.name for p in characters] == ["沃伦·巴菲特", "格蕾丝·霍珀"]
    assert len(table) == 5 and [p.tier for p in table].count("l1") == 2  # the tension stays
    for persona in characters:
        assert persona.source == Persona.Source.DISTILLED
        assert persona.distilled_by == alice and persona.distilled_at is not None
        assert "致股东的信" in persona.sources
    assert characters[0].expression_style == "说话像在股东大会上回答提问，朴实而幽默。"
    assert characters[0].name_en == "Warren Buffett" and characters[0].slug == "warren-buffett"

    # They speak as themselves: the engine seats them with their persona text.
    spec = debate_spec(debate)
    spec.options = dataclasses.replace(spec.options, no_interrupt=True, force=True)
    fake_llm = FakeLLM()
    outcome = asyncio.run(run_debate(spec, ClientPool(fake_llm), ev.ListSink(), Ledger()))
    assert outcome == "done"
    r1 = next(c for c in fake_llm.calls if c.key == "r1:warren-buffett")
    assert "沃伦·巴菲特" in r1.system + r1.user and "说话像在股东大会上回答提问" in r1.system + r1.user

    # Curated in the admin like any persona: listed with its source, filtered by it.
    listing = admin_client.get("/admin/personas/persona/", {"source__exact": "distilled"}, **EN).content.decode()
    assert "warren-buffett" in listing and "grace-hopper" in listing and "devil-advocate" not in listing
    page = admin_client.get(f"/admin/personas/persona/{characters[0].pk}/change/", **EN).content.decode()
    assert '<option value="distilled" selected>' in page and "alice" in page

    # Named again later: seated from the library, no second distillation.
    again = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable"}, **EN)
    assert len(fake.requests) == 2
    chosen = re.findall(r'name="personas" value="([^"]+)" id="[^"]+" checked', again.content.decode())
    assert {"warren-buffett", "grace-hopper"} <= set(chosen)


def test_english_question_names_them_with(client, fake, without_bundled_characters):
    html = client.post("/debates/new/", {"topic": QUESTION_EN, "format": "roundtable"}, **EN).content.decode()
    assert [asked_of(r.body) for r in fake.requests] == [("Warren Buffett", "en"), ("Grace Hopper", "en")]
    prompt = fake.requests[0].body["messages"][-1]["content"]
    assert "Cognitive frame:" in prompt and not re.search("[\u4e00-\u9fff]", prompt)
    response = client.post("/debates/new/", posted(html), **EN)
    assert response.status_code == 302
    names = [p.called("en") for p in seated(Debate.objects.get()) if p.tier == "l3"]
    assert names == ["Warren Buffett", "Grace Hopper"]
    assert Persona.objects.get(slug="warren-buffett").knowledge_domain.startswith("Capital allocation")


def test_the_bundled_characters_are_seated_from_the_library_without_a_call(client, fake):
    response = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable"}, **EN)
    html = response.content.decode()
    assert fake.requests == []
    chosen = re.findall(r'name="personas" value="([^"]+)" id="[^"]+" checked', html)
    assert "warren-buffett" in chosen and "grace-hopper" in chosen
    assert "Already in the library" in html
    assert client.post("/debates/new/", posted(html), **EN).status_code == 302
    assert {p.slug for p in seated(Debate.objects.get())} >= {"warren-buffett", "grace-hopper"}


def test_add_a_character_field(client, fake, without_bundled_characters):
    personas = ["devil-advocate", "optimist", "ai-product-manager"]
    data = {"topic": "我们要不要做 AI 客服", "format": "roundtable", "personas": personas, "add_characters": "霍珀"}
    html = client.post("/debates/new/", data, **EN).content.decode()
    assert [asked_of(r.body) for r in fake.requests] == [("霍珀", "zh")]
    assert 'id="id_add_characters"' in html and 'value="格蕾丝·霍珀"' in html
    # Unticked: not seated and not saved.
    unticked = posted(html)
    unticked.pop("character-0-seat")
    assert client.post("/debates/new/", unticked, **EN).status_code == 302
    assert [p.slug for p in seated(Debate.objects.get())] == personas
    assert not Persona.objects.filter(source="distilled").exists()


# -- refusals ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("认识此人：否\n中文名：无", "the model does not know a real person called “霍珀”"),
        ("认识此人：是\n中文名：格蕾丝·霍珀\n认知框架：无", "the model's answer lacks what a persona needs"),
        (
            distilled("霍珀", "zh").replace("知识域：", "知识域：本场议题是要不要做 AI 客服；"),
            "reads like a debate question",
        ),
        (distilled("霍珀", "zh").replace("知识域：", "知识域：关于我们要不要做 AI 客服；"), "repeats the question"),
    ],
)
def test_a_person_no_model_can_distil_is_refused_beside_the_field(client, settings, reply, reason):
    Persona.objects.filter(slug="grace-hopper").delete()
    with FakeOpenAIServer(script=lambda body: reply if asked_of(body) else None) as server:
        settings.OPENAI_BASE_URL = server.base_url
        data = {"topic": "和霍珀讨论我们要不要做 AI 客服", "format": "roundtable"}
        html = client.post("/debates/new/", data, **EN).content.decode()
    refusal = errors_in(html, "field-add_characters")
    assert "霍珀 is refused" in refusal and reason in refusal and "No substitute is made" in refusal
    assert 'name="character-0-name"' not in html  # no degraded stand-in
    # Start again: the debate goes on with the roles, the refused name is not asked again.
    response = client.post("/debates/new/", posted(html), **EN)
    assert response.status_code == 302
    assert all(p.tier != "l3" for p in seated(Debate.objects.get()))
    assert not Persona.objects.filter(source="distilled").exists()


def test_a_model_that_cannot_be_reached_refuses_the_character(client, settings, without_bundled_characters):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens
    settings.AGORA_PROVIDER_RETRIES = 0
    html = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable"}, **EN).content.decode()
    refusal = errors_in(html, "field-add_characters")
    assert "巴菲特 is refused: no model could distil it" in refusal and "霍珀 is refused" in refusal
    assert not Debate.objects.exists()


def test_a_distillation_that_outlasts_the_turn_deadline_is_refused(client, settings):
    """The call runs inside the Start request and is counted against the running limit for as long
    as the deadline allows (`admission.distillation_deadline`): it ends there, refused."""
    Persona.objects.filter(slug="grace-hopper").delete()
    settings.AGORA_TURN_DEADLINE = 1
    slow = Reply(text=distilled("霍珀", "zh"), first_token_delay=5)
    with FakeOpenAIServer(script=lambda body: slow if asked_of(body) else None) as server:
        settings.OPENAI_BASE_URL = server.base_url
        data = {"topic": "和霍珀讨论我们要不要做 AI 客服", "format": "roundtable"}
        html = client.post("/debates/new/", data, **EN).content.decode()
    refusal = errors_in(html, "field-add_characters")
    assert "霍珀 is refused: no model could distil it (no answer within 1 s)" in refusal
    assert 'name="character-0-name"' not in html


def test_an_edit_that_breaks_purity_is_refused_beside_its_field(client, fake, without_bundled_characters):
    html = client.post("/debates/new/", {"topic": QUESTION, "format": "roundtable"}, **EN).content.decode()
    data = posted(html, character__1__adversarial_rules="本场议题：要不要做客服。")
    response = client.post("/debates/new/", data, **EN)
    assert response.status_code == 200 and not Debate.objects.exists()
    assert "Reads like a debate question" in errors_in(response.content.decode(), "field-character-1-adversarial_rules")
    assert not Persona.objects.filter(source="distilled").exists()
    # Bounded: a text longer than any answer is refused beside its field.
    response = client.post("/debates/new/", posted(html, character__0__knowledge_domain="长" * 2001), **EN)
    assert response.status_code == 200 and not Debate.objects.exists()
    assert "at most 2000 characters" in errors_in(response.content.decode(), "field-character-0-knowledge_domain")


# -- the engine's reading of who is asked -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "names"),
    [
        (QUESTION, ["巴菲特", "霍珀"]),
        ("我想跟芒格聊聊要不要买房", ["芒格"]),
        ("请与 Elon Musk 和 史蒂夫·乔布斯 一起探讨是否做硬件", ["Elon Musk", "史蒂夫·乔布斯"]),
        (QUESTION_EN, ["Warren Buffett", "Grace Hopper"]),
        (
            "With Warren Buffett, Charlie Munger and Grace Hopper: should we build it?",
            ["Warren Buffett", "Charlie Munger", "Grace Hopper"],
        ),
        ("Let's talk it over with Grace Hopper: should we rewrite in COBOL?", ["Grace Hopper"]),
        ("要不要和老板讨论加薪", []),
        ("我们要不要做 AI 客服？", []),
        ("Should we adopt Kubernetes with Docker and Helm?", []),
        ("Discuss with AI whether to quit", []),
    ],
)
def test_who_a_question_asks_for(question, names):
    assert distill.asked_characters(question) == names


# -- imports -----------------------------------------------------------------------------------------------


def manifest(source: str = "bundled") -> dict:
    return {
        "agora_manifest": 1,
        "library": {"slug": "imported-characters", "name": "Imported", "format": "roundtable"},
        "personas": [
            {
                "slug": "ada-lovelace",
                "name": "阿达·洛芙莱斯",
                "kind": "debater",
                "tier": "l3",
                "cognitive_frame": "把机器看作能处理符号而不只是数字的东西。",
                "source": source,
            }
        ],
    }


@pytest.mark.parametrize("claimed", ["bundled", "distilled"])
def test_an_imported_character_is_recorded_external_import(admin_client, tmp_path, claimed):
    response = admin_client.post(
        "/admin/personas/library/import/", {"text": dump_manifest(manifest(claimed)), "replace": "on"}
    )
    assert response.status_code == 302
    assert Persona.objects.get(slug="ada-lovelace").source == Persona.Source.EXTERNAL


def test_import_library_command_records_external_import(tmp_path):
    from django.core.management import call_command

    path = tmp_path / "lib.json"
    path.write_text(json.dumps(manifest()), encoding="utf-8")
    call_command("import_library", str(path), verbosity=0)
    assert Persona.objects.get(slug="ada-lovelace").source == Persona.Source.EXTERNAL
    # The bundled libraries stay bundled.
    assert Persona.objects.get(slug="devil-advocate").source == Persona.Source.BUNDLED
