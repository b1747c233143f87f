"""The bilingual UI: zh-hans and en catalogues ship compiled, pages follow the visitor's language
(Accept-Language, or the cookie set by the switcher), and the zh-hans catalogue leaves nothing out."""

from __future__ import annotations

import ast
import gettext
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

LOCALE = Path(settings.BASE_DIR) / "locale"
ZH_PO = LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.po"
EN_PO = LOCALE / "en" / "LC_MESSAGES" / "django.po"
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]")

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def page(client, url, **headers) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200
    return response.content.decode()


# --- the catalogue -----------------------------------------------------------------------------


def _unquote(line: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), line.strip()[1:-1])


def read_po(path: Path) -> list[dict]:
    """The entries of a .po file: {"flags": [...], "msgid": ..., "msgstr": [...]} (header excluded)."""
    entries = []
    for block in path.read_text(encoding="utf-8").strip().split("\n\n"):
        entry, key = {"flags": [], "msgstr": []}, None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += [f.strip() for f in line[2:].split(",")]
            elif line.startswith("#"):
                continue
            elif line.startswith('"'):
                if key.startswith("msgstr"):
                    entry["msgstr"][-1] += _unquote(line)
                else:
                    entry[key] += _unquote(line)
            else:
                key, _sep, rest = line.partition(" ")
                if key.startswith("msgstr"):
                    entry["msgstr"].append(_unquote(rest))
                else:
                    entry[key] = _unquote(rest)
        if entry.get("msgid"):
            entries.append(entry)
    return entries


def test_zh_hans_catalogue_is_complete():
    entries = read_po(ZH_PO)
    assert len(entries) > 150
    for entry in entries:
        assert "fuzzy" not in entry["flags"], entry["msgid"]
        assert entry["msgstr"] and all(entry["msgstr"]), f"untranslated: {entry['msgid']!r}"
        for translation in entry["msgstr"]:
            sources = set(PLACEHOLDER.findall(entry["msgid"] + entry.get("msgid_plural", "")))
            assert set(PLACEHOLDER.findall(translation)) == sources, entry["msgid"]
    assert "#, fuzzy" not in ZH_PO.read_text(encoding="utf-8")


def test_compiled_catalogues_ship_and_match_the_sources():
    zh = gettext.GNUTranslations((ZH_PO.with_suffix(".mo")).open("rb"))
    for entry in read_po(ZH_PO):
        if "msgid_plural" in entry:
            assert zh.ngettext(entry["msgid"], entry["msgid_plural"], 1) == entry["msgstr"][0]
        else:
            assert zh.gettext(entry["msgid"]) == entry["msgstr"][0], entry["msgid"]
    # English is the source language: its catalogue compiles and holds the same msgids, untranslated.
    en = gettext.GNUTranslations((EN_PO.with_suffix(".mo")).open("rb"))
    assert en.gettext("New debate") == "New debate"
    assert {e["msgid"] for e in read_po(EN_PO)} == {e["msgid"] for e in read_po(ZH_PO)}


def source_msgids() -> set[str]:
    """Single-literal `_("…")` calls and `{% translate "…" %}` tags in the project's code (a guard,
    not a full extractor: makemessages is that)."""
    base = Path(settings.BASE_DIR)
    found = set()
    python = re.compile(r"""\b_\(\s*("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\s*\)""")
    for app in ("agora", "debates", "personas"):
        for path in (base / app).rglob("*.py"):
            if "migrations" not in path.parts:
                found |= {ast.literal_eval(m) for m in python.findall(path.read_text(encoding="utf-8"))}
    template = re.compile(r"""\{%\s*(?:translate|trans)\s+("[^"]*"|'[^']*')\s*%\}""")
    for path in (base / "templates").rglob("*.html"):
        found |= {m[1:-1] for m in template.findall(path.read_text(encoding="utf-8"))}
    return found


def test_catalogue_covers_the_source_strings():
    catalogue = {e["msgid"] for e in read_po(ZH_PO)}
    missing = sorted(source_msgids() - catalogue)
    assert not missing, f"run makemessages and translate: {missing}"


# --- pages -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_home_page_in_chinese_and_english(client):
    call_command("load_libraries")
    zh = page(client, reverse("debates:home"), **ZH)
    assert '<html lang="zh-hans">' in zh
    for text in ("新建辩论", "发起辩论", "历史记录", "搜索问题", "全部形式", "人格库", "祖师对辩", "排队中", "个人格"):
        assert text in zh, text
    assert "Start a debate" not in zh

    en = page(client, reverse("debates:home"), **EN)
    assert '<html lang="en">' in en
    for text in ("New debate", "Start a debate", "History", "Search questions", "Persona libraries", "Duel", "queued"):
        assert text in en, text
    assert "新建辩论" not in en
    assert re.search(r"— \d+ personas</li>", en)


@pytest.mark.django_db
def test_new_debate_page_in_chinese_and_english(client):
    # The research budget is the panel's own option: shown for it alone.
    zh = page(client, reverse("debates:new") + "?format=panel", **ZH)
    for text in ("新建辩论", "问题", "入席人格", "研究预算", "模型（高级）", "开始辩论", "圆桌讨论"):
        assert text in zh, text
    en = page(client, reverse("debates:new") + "?format=panel", **EN)
    for text in ("New debate", "Personas at the table", "Research budget", "Models (advanced)", "Start the debate"):
        assert text in en, text
    assert "开始辩论" not in en


@pytest.mark.django_db
def test_browsers_usual_headers_pick_the_language(client):
    assert "开始辩论" in page(client, reverse("debates:new"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.8")
    assert "Start the debate" in page(client, reverse("debates:new"), HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9")


@pytest.mark.django_db
def test_language_cookie_selects_the_language(client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "en"
    assert "Start the debate" in page(client, reverse("debates:new"))
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    assert "开始辩论" in page(client, reverse("debates:new"))


@pytest.mark.django_db
def test_switcher_changes_the_language_for_the_next_request(client):
    home = reverse("debates:home")
    assert "新建辩论" in page(client, home, **ZH)

    response = client.post(reverse("set_language"), {"language": "en", "next": home}, **ZH)
    assert response.status_code == 302 and response.url == home
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "en"
    # The choice outranks the browser's Accept-Language from now on.
    after = page(client, home, **ZH)
    assert ">New debate</a>" in after and "新建辩论" not in after
    assert '<option value="en" selected>' in after

    client.post(reverse("set_language"), {"language": "zh-hans", "next": home}, **EN)
    back = page(client, home, **EN)
    assert ">新建辩论</a>" in back and ">New debate</a>" not in back


@pytest.mark.django_db
def test_form_errors_are_translated(client):
    data = {"topic": "何为禅？", "format": "panel", "rounds": "2", "research_budget": "standard"}
    zh = client.post(reverse("debates:new"), data, **ZH).content.decode()
    assert "该形式自行决定轮数；请将“轮数”留空。" in zh
    en = client.post(reverse("debates:new"), data, **EN).content.decode()
    assert "This format sets its own rounds; leave Rounds empty." in en

    # The project's own message and Django's built-in ones alike.
    blank = {"topic": "\u200b", "format": "duel", "research_budget": "standard"}
    assert "请提出一个问题：问题不能为空。" in client.post(reverse("debates:new"), blank, **ZH).content.decode()
    missing = client.post(reverse("debates:new"), {"format": "duel"}, **ZH).content.decode()
    assert "这个字段是必填项。" in missing


@pytest.mark.django_db
def test_status_labels_are_translated():
    from django.utils import translation

    from debates.models import Status
    from personas.models import format_choices

    with translation.override("zh-hans"):
        assert str(Status.WAITING.label) == "检查点等待中"
        assert dict(format_choices())["roundtable"] == "圆桌讨论"
    with translation.override("en"):
        assert str(Status.WAITING.label) == "waiting at checkpoint"


@pytest.mark.django_db
def test_admin_coverage_page_in_chinese(admin_client):
    html = page(admin_client, reverse("admin:personas_persona_coverage"), **ZH)
    assert "交叉批评覆盖情况" in html and "任意两个人格" in html
