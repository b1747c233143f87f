"""The start form as a person meets it: the chosen format's personas as cards, its modes, rounds
with their default and maximum, sides per persona, its own options, a question counter, and
errors in words (never a slug, a field name, a format's internal name or a Python repr)."""

from __future__ import annotations

import dataclasses
import re
from html import escape, unescape

import pytest
from django.utils import translation

from debates.engine import registry
from debates.forms import MAX_TOPIC, create_debate
from debates.models import Debate
from personas.models import Library, Persona
from tests.web.formpage import errors_in

# The formats' own defaults: a remote default model (the bundled model's sizing: test_bundled_sizing.py).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs", "remote_default")]

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
FORMATS = registry.names()


def start_page(client, fmt: str, **headers) -> str:
    response = client.get("/debates/new/", {"format": fmt}, **headers)
    assert response.status_code == 200
    return response.content.decode()


def part(client, fmt: str, **headers) -> str:
    response = client.get("/debates/new/part/", {"format": fmt, "topic": ""}, **headers)
    assert response.status_code == 200
    return response.content.decode()


def cards(html: str) -> list[str]:
    return re.findall(r'<div class="card" data-slug="([^"]+)">', html)


def debaters_of(fmt: str) -> set[str]:
    return set(Persona.objects.filter(library__format=fmt, kind=Persona.Kind.DEBATER).values_list("slug", flat=True))


@pytest.mark.parametrize("fmt", FORMATS)
def test_cards_are_the_formats_debaters_on_the_page_and_in_the_part(client, fmt):
    for html in (start_page(client, fmt), part(client, fmt)):
        shown = cards(html)
        assert shown and set(shown) == debaters_of(fmt) and len(shown) == len(set(shown))
        assert f'<input type="hidden" name="part_format" value="{fmt}">' in html
        for slug in shown:
            assert f'<input type="checkbox" name="personas" value="{slug}" id="persona-{slug}"' in html
    assert not re.search(r'<select[^>]*name="personas"', html), "no multi-select of every library"


def test_cards_read_the_viewers_language(client):
    huineng = Persona.objects.get(slug="huineng")
    english, chinese = escape(huineng.description_en), escape(huineng.description)
    assert english in start_page(client, "duel", **EN) and chinese not in start_page(client, "duel", **EN)
    assert chinese in start_page(client, "duel", **ZH) and english not in start_page(client, "duel", **ZH)
    # The name too, in the reader's language.
    assert escape(huineng.name_en) in start_page(client, "duel", **EN) and huineng.name_en != huineng.name
    assert huineng.name not in start_page(client, "duel", **EN)
    assert huineng.name in start_page(client, "duel", **ZH)
    # Without an English line, English viewers read the one there is.
    Persona.objects.filter(slug="huineng").update(description_en="")
    assert chinese in start_page(client, "duel", **EN)


def test_hosts_and_moderators_are_no_cards(client):
    hosts = Persona.objects.exclude(kind=Persona.Kind.DEBATER).values_list("slug", flat=True)
    assert hosts
    for fmt in FORMATS:
        assert not set(hosts) & set(cards(start_page(client, fmt)))


def test_the_format_in_the_address_chooses_the_part_and_the_part_updates_the_address(client):
    html = start_page(client, "panel")
    assert re.search(r'<option value="panel" selected>', html)
    assert set(cards(html)) == debaters_of("panel")
    response = client.get("/debates/new/part/", {"format": "roundtable", "topic": "要不要加上 RAG 检索？"})
    assert response["HX-Replace-Url"] == "/debates/new/?format=roundtable"
    # The suggestion for the new format comes along.
    assert 'data-slug="devil-advocate"' in response.content.decode().split('<div id="suggestion"')[1]


def test_a_question_in_the_address_comes_with_its_suggestion(client):
    html = client.get("/debates/new/", {"topic": "念佛与参禅，哪条路更适合现代人修行？"}).content.decode()
    box = html.split('<div id="suggestion"')[1].split("</div>")[0]
    assert 'data-slug="huineng"' in box and 'data-slug="yinguang"' in box


@pytest.mark.parametrize("fmt", FORMATS)
def test_modes_are_the_formats_own(client, fmt):
    html = part(client, fmt, **EN)
    modes = re.findall(r'<input type="radio" name="mode" value="([^"]*)"', html)
    own = [m.name for m in registry.get(fmt).modes]
    if registry.get(fmt).mode_hint:  # "from the question" comes first and is the default
        assert modes == ["", *own] and re.search(r'name="mode" value="" checked', html)
        assert "Auto: from the question" in html
    elif modes:  # the first mode is the default
        assert modes == own and re.search(rf'name="mode" value="{re.escape(modes[0])}" checked', html)
    else:
        assert 'id="field-mode"' not in html


@pytest.mark.parametrize("fmt", FORMATS)
def test_for_and_against_per_persona_only_where_a_mode_assigns_sides(client, fmt):
    html = part(client, fmt, **EN)
    takes_sides = any(m.positions for m in registry.get(fmt).modes)
    for slug in cards(html):
        radios = re.findall(rf'<input type="radio" name="position-{re.escape(slug)}" value="(\w+)"', html)
        assert radios == (["for", "against"] if takes_sides else [])
    positioned = [m.name for m in registry.get(fmt).modes if m.positions]
    for name in positioned:  # CSS shows the sides when this radio is checked
        assert re.search(rf'name="mode" value="{name}"[^>]*data-positions', html)
    assert 'name="positions"' not in html, "the old slug=for text field is gone"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_formats_own_options_are_shown_for_it_alone(client, fmt):
    html = part(client, fmt, **EN)
    options = registry.get(fmt).Options.names()
    for name in ("research_budget", "no_interrupt"):
        assert (f'id="field-{name}"' in html) == (name in options), name


@pytest.mark.parametrize("fmt", FORMATS)
def test_rounds_show_default_and_maximum_or_are_absent(client, fmt):
    html = part(client, fmt, **EN)
    rounds = registry.get(fmt).rounds
    if not rounds.user_sets:
        assert 'name="rounds"' not in html
        return
    protocol = Library.objects.filter(format=fmt).first().protocol
    default, maximum = rounds.default_for(protocol), rounds.maximum_for(protocol)
    assert f'placeholder="default {default}"' in html
    assert f'max="{maximum}"' in html
    assert f"Empty means the default, {default}; at most {maximum}." in html


def test_duel_rounds_hint_reads_the_librarys_protocol(client):
    assert "Empty means the default, 4; at most 8." in part(client, "duel", **EN)
    Library.objects.filter(format="duel").update(protocol={"default_rounds": 2, "max_rounds": 5})
    assert "Empty means the default, 2; at most 5." in part(client, "duel", **EN)
    assert "默认 2 轮，最多 5 轮" in part(client, "duel", **ZH)


def test_the_question_has_a_counter_and_an_over_long_one_is_refused_not_cut(client):
    html = start_page(client, "duel")
    assert f'<small class="counter" id="topic-counter">0 / {MAX_TOPIC}</small>' in html
    assert 'data-counter="topic-counter"' in html and "maxlength" not in html.split('id="id_topic"')[1].split(">")[0]
    question = "问" * (MAX_TOPIC + 1)
    response = client.post("/debates/new/", {"topic": question, "format": "duel"}, **EN)
    html = response.content.decode()
    assert f'<small class="counter over" id="topic-counter">{MAX_TOPIC + 1} / {MAX_TOPIC}</small>' in html
    assert "at most 1000 characters" in errors_in(html, "field-topic")
    assert question in html, "the question comes back whole"
    assert Debate.objects.count() == 0


def test_line_breaks_count_once_as_the_counter_counts_them(client, no_runs):
    # A browser posts each line break as CRLF: 999 characters and a break are 1000, not 1001.
    question = "问" * 499 + "\r\n" + "答" * 500
    response = client.post("/debates/new/", {"topic": question, "format": "duel", "personas": ["huineng", "yinguang"]})
    assert response.status_code == 302, errors_in(response.content.decode(), "field-topic")


def test_sides_from_the_cards_are_the_seats_positions(client, no_runs):
    response = client.post(
        "/debates/new/",
        {
            "topic": "该不该追问每个定义？",
            "format": "moderated",
            "mode": "position-based",
            "personas": ["socrates", "confucius", "zhuangzi"],
            "position-socrates": "for",
            "position-confucius": "against",
            "position-zhuangzi": "against",
        },
    )
    assert response.status_code == 302
    assert dict(Debate.objects.get().seats.values_list("persona__slug", "position")) == {
        "socrates": "for",
        "confucius": "against",
        "zhuangzi": "against",
    }


def test_sides_left_over_from_another_mode_are_not_kept(client, no_runs):
    response = client.post(
        "/debates/new/",
        {
            "topic": "该不该追问每个定义？",
            "format": "moderated",
            "mode": "round-robin",
            "personas": ["socrates", "confucius"],
            "position-socrates": "for",
        },
    )
    assert response.status_code == 302
    assert set(Debate.objects.get().seats.values_list("position", flat=True)) == {""}


def test_the_cli_maps_positions_onto_the_cards_fields(no_runs):
    values = {"topic": "该不该追问每个定义？", "format": "moderated", "mode": "position-based"}
    debate, errors = create_debate(
        values | {"personas": ["socrates", "confucius"], "positions": {"socrates": "against", "confucius": "for"}}
    )
    assert not errors, errors
    assert dict(debate.seats.values_list("persona__slug", "position")) == {"socrates": "against", "confucius": "for"}
    _none, errors = create_debate(values | {"personas": ["socrates", "confucius"], "positions": {"socrates": "for"}})
    assert "孔子" in " ".join(errors["personas"]), "who still needs a side is named"


def test_cli_positions_are_parsed_and_checked():
    from django.core.management.base import CommandError

    from debates.management.commands.debate import parse_positions

    assert parse_positions("a=for, b = against") == {"a": "for", "b": "against"}
    assert parse_positions("") == {}
    with pytest.raises(CommandError):
        parse_positions("a=pro")


def test_changing_the_format_without_script_shows_the_new_formats_part(client, no_runs):
    """A browser without script posts the old format's part with the new format chosen: the page
    comes back with the new format's cards and a word about what to do, and starts nothing."""
    response = client.post(
        "/debates/new/",
        {"topic": "何为禅？", "format": "panel", "part_format": "duel", "personas": ["huineng", "yinguang"]},
        **EN,
    )
    html = response.content.decode()
    assert response.status_code == 200 and Debate.objects.count() == 0
    assert "You changed the format" in errors_in(html, "form-errors")
    assert set(cards(html)) == debaters_of("panel")
    assert errors_in(html, "field-personas") == "", "the other format's personas are not an error"
    assert "何为禅？" in html


def test_posted_choices_come_back_checked(client):
    response = client.post(
        "/debates/new/",
        {
            "topic": "",
            "format": "moderated",
            "part_format": "moderated",
            "mode": "position-based",
            "personas": ["socrates", "confucius"],
            "position-socrates": "for",
            "rounds": "3",
        },
    )
    html = response.content.decode()
    assert 'value="socrates" id="persona-socrates" checked' in html
    assert 'value="confucius" id="persona-confucius" checked' in html
    assert 'value="zhuangzi" id="persona-zhuangzi">' in html
    assert re.search(r'name="position-socrates" value="for" checked', html)
    assert re.search(r'name="mode" value="position-based" checked', html)
    assert 'value="3"' in html.split('id="id_rounds"')[1].split(">")[0]


# -- errors in words ---------------------------------------------------------------------------------

# A field's name (research_budget), the form's catch-all key, a Python repr, slug=value syntax.
INTERNAL = re.compile(r"\b\w+_\w+\b|__all__|\[|\]|\{|\}|<\w+ object|\bNone\b|\w+=\w+")

ERROR_CASES = [
    {"topic": "   "},
    {"topic": "问" * 1001},
    {"personas": ["huineng", "no-such-master"]},
    {"personas": ["huineng", "huineng"]},
    {"personas": ["huineng"]},
    {"personas": ["huineng", "yinguang", "xuanzang"]},
    {"format": "panel", "personas": ["osborn", "hegel", "bayes", "feynman", "debono", "huineng"]},
    {"format": "panel", "personas": ["osborn", "hegel", "cicero"]},
    {"format": "panel", "personas": ["osborn", "hegel", "zhiyi"]},
    {"format": "roundtable", "personas": ["devil-advocate", "optimist"]},
    {"format": "roundtable", "mode": "quick", "personas": ["devil-advocate", "optimist"]},
    {"format": "roundtable", "mode": "no-such-mode"},
    {"format": "moderated", "personas": ["socrates", "moderator"]},
    {"format": "moderated", "mode": "position-based"},
    {"format": "moderated", "mode": "position-based", "personas": ["socrates", "confucius"]},
    {"format": "moderated", "mode": "position-based", "personas": ["socrates", "confucius"], "position-socrates": "x"},
    {"format": "moderated", "rounds": "99", "personas": ["socrates", "confucius"]},
    {"format": "moderated", "personas": ["socrates"]},  # (nobody chosen is never refused: a pair is filled)
    {"topic": "天气怎么样"},
    {"rounds": "9"},
    {"rounds": "0"},
    {"rounds": "many"},
    {"format": "panel", "rounds": "3"},
    {"mode": "quick"},
    {"format": "no-such-format"},
    {"research_budget": "huge", "format": "panel"},
    {"personas": ["huineng", "yinguang"], "seat_models": "nobody = some-model"},
    {"personas": ["huineng", "yinguang"], "seat_models": "huineng = nowhere/some-model"},
    {"provider": "999"},
]


def all_errors(html: str) -> str:
    ids = re.findall(r'id="(field-[\w-]+|form-errors)"', html)
    return " | ".join(filter(None, (errors_in(html, i) for i in ids)))


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("fields", ERROR_CASES, ids=[str(i) for i in range(len(ERROR_CASES))])
def test_every_error_is_in_words(client, fields, language):
    data = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"} | fields
    response = client.post("/debates/new/", data, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200 and Debate.objects.count() == 0
    html = response.content.decode()
    shown = all_errors(html)
    assert shown, f"{fields}: no error shown"
    said = re.sub(r"“[^”]*”", "", shown)  # what the user typed, quoted back, is theirs
    slugs = set(Persona.objects.values_list("slug", flat=True)) | {"no-such-master", "no-such-mode", "no-such-format"}
    assert not set(re.findall(r"[\w-]+", said)) & slugs, f"{fields}: a persona's id in {shown!r}"
    assert not INTERNAL.search(said), f"{fields}: {shown!r}"
    if language == "zh-hans":  # no English left, so no format's internal name either
        assert not re.search(r"[A-Za-z]{2,}", said), f"{fields}: {shown!r}"


def test_every_form_and_check_message_in_the_catalogue_reads_as_words():
    """Every message the form and the formats' checks can say, as the catalogue holds it in both
    languages: no slug syntax, no field name, nothing filled with a list of slugs, no English left
    in the Chinese."""
    from tests.web.test_i18n import ZH_PO, _unquote

    sources = ("debates/forms.py", "debates/engine/format.py")  # the formats' own: test_every_error_is_in_words
    checked = 0
    for block in ZH_PO.read_text(encoding="utf-8").split("\n\n"):
        if not any(f"#: {source}:" in block or f" {source}:" in block for source in sources):
            continue
        parts = re.split(r"^(msgid|msgstr)\s", block, flags=re.M)
        values = ("".join(_unquote(x) for x in p.splitlines() if x.strip()) for p in parts[2::2])
        entry = dict(zip(parts[1::2], values, strict=True))
        msgid, msgstr = entry.get("msgid", ""), entry.get("msgstr", "")
        for text in (msgid, msgstr):
            assert not re.search(r"slug|\w+_\w+|\w+=\w+|%\((slugs|dups|item)\)", text), text
        # Model ids (o3, o4-mini, gpt-5, deepseek-reasoner) are names, the same in every language.
        names = r"%\(\w+\)[sd]|Agora|token|\bo\d[\w-]*|\bgpt-[\w.-]+|\bdeepseek-[\w-]+"
        assert not re.search(r"[A-Za-z]{2,}", re.sub(names, "", msgstr)), msgstr
        checked += 1
    assert checked > 25


def test_persona_names_not_slugs_in_a_duplicate_error(client):
    response = client.post("/debates/new/", {"topic": "何为禅？", "format": "duel", "personas": ["huineng", "huineng"]})
    errors = errors_in(response.content.decode(), "field-personas")
    assert Persona.objects.get(slug="huineng").name in errors and "huineng" not in errors


# -- the suggestion and the submit agree -------------------------------------------------------------

QUESTIONS = [
    "念佛与参禅，哪条路更适合现代人修行？",
    "天气",
    "要不要给我们的 AI 产品加上 RAG 检索？",
    "用逆向思考看产品设计：创业公司该不该追求完美？",
    "我们公司明年是否应该把核心交易系统迁到云上？",
]


def modes_of(fmt: str) -> list[str]:
    return [m.name for m in registry.get(fmt).modes] or [""]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_suggestion_refuses_exactly_when_the_submit_does(client, no_runs, fmt):
    """Nobody chosen: where the box says why it cannot choose, the submit refuses with the same
    words; where the box suggests, the submit starts the debate."""
    for question in QUESTIONS:
        for mode in modes_of(fmt):
            box = client.get("/debates/suggest/", {"topic": question, "format": fmt, "mode": mode}, **EN)
            refusal = re.search(r"data-refusal>(.*?)</p>", box.content.decode(), re.S)
            data = {"topic": question, "format": fmt, "mode": mode}
            response = client.post("/debates/new/", data, **EN)
            if refusal:
                assert response.status_code == 200, (question, mode)
                said = unescape(refusal.group(1).strip())  # the page's text, as errors_in reads it
                assert said in errors_in(response.content.decode(), "field-personas")
            else:
                if registry.get(fmt).confirms_choice:  # first the roles it picked, to confirm
                    html = response.content.decode()
                    assert response.status_code == 200 and 'id="start-notice"' in html, (question, mode)
                    picked = re.findall(r'name="personas" value="([^"]+)" id="[^"]+" checked', html)
                    assert set(picked) == set(re.findall(r'data-slug="([^"]+)"', box.content.decode()))
                    assert not Debate.objects.exists()
                    response = client.post("/debates/new/", {**data, "personas": picked}, **EN)
                assert response.status_code == 302, (question, mode, all_errors(response.content.decode()))
                Debate.objects.all().delete()  # within the running limit


def test_option_fields_follow_the_options_dataclass():
    """Which options a format shows comes from its `Options`, not from its name."""
    from debates.forms import DebateForm

    form = DebateForm()
    for fmt in registry.all_formats():
        fields = {f.name for f in dataclasses.fields(fmt.Options)}
        assert set(form.option_fields(fmt)) <= fields
        assert ("research_budget" in form.option_fields(fmt)) == ("research_budget" in fields)


def test_translated_labels_on_the_page(client):
    with translation.override("zh-hans"):
        html = part(client, "moderated", **ZH)
    for text in ("正方", "反方", "正反立场", "轮数"):
        assert text in html, text
