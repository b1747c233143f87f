"""Defaults that run (issue 27): the panel's evidence rule is on the start form before Start,
beside the material field (from the option's one declaration), also after a format switch; and a
refused debate of any format offers "Start again with this question", which opens the start form
refilled from it (question, format, options, personas) for its owner, the question and format
only for anyone else who may see it."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.utils import translation

from debates.engine import registry
from debates.engine.panel import EVIDENCE_RULE
from debates.forms import create_debate
from debates.models import Debate, Status

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs", "remote_default")]

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def help_of(html: str, name: str) -> str:
    found = re.search(rf'<small class="help" id="id_{name}_help"[^>]*>(.*?)</small>', html, re.S)
    return unescape(found.group(1)) if found else ""


def translated(msgid: str, language: str) -> str:
    with translation.override(language):
        return translation.gettext(msgid)


@pytest.mark.parametrize(("headers", "language"), [(EN, "en"), (ZH, "zh-hans")])
def test_the_panels_evidence_rule_stands_beside_the_material_field_before_start(client, headers, language):
    panel = client.get("/debates/new/", {"format": "panel"}, **headers).content.decode()
    rule = translated(EVIDENCE_RULE, language)
    assert help_of(panel, "evidence") == rule
    textarea = re.search(r"<textarea[^>]*name=\"evidence\"[^>]*>", panel).group(0)
    assert 'aria-describedby="id_evidence_help"' in textarea
    duel = client.get("/debates/new/", {"format": "duel"}, **headers).content.decode()
    assert help_of(duel, "evidence") and help_of(duel, "evidence") != rule  # the rule is the panel's


def test_switching_the_format_brings_the_material_fields_help_out_of_band(client):
    panel = client.get("/debates/new/part/", {"format": "panel", "topic": ""}, **EN).content.decode()
    oob = re.search(r'<small class="help" id="id_evidence_help" hx-swap-oob="true">(.*?)</small>', panel, re.S)
    assert oob and unescape(oob.group(1)) == EVIDENCE_RULE
    duel = client.get("/debates/new/part/", {"format": "duel", "topic": ""}, **EN).content.decode()
    oob = re.search(r'<small class="help" id="id_evidence_help" hx-swap-oob="true">(.*?)</small>', duel, re.S)
    assert oob and unescape(oob.group(1)) != EVIDENCE_RULE


# -- start again -------------------------------------------------------------------------------------

STARTS = {
    "panel": {
        "topic": "Should we raise our Nvidia position to 10% this quarter?",
        "personas": ["osborn", "hegel", "bayes", "feynman", "debono"],  # the panel seats its five
        "evidence": "Gross margin: 75%",
        "research_budget": "light",
    },
    "duel": {"topic": "参禅与念佛，哪一条路更适合今天的在家人？", "personas": ["huineng", "yinguang"]},
    "roundtable": {"topic": "我们的客服产品要不要引入 RAG 知识库？"},
    "moderated": {"topic": "小公司应该先做产品还是先做销售？"},
}


def refused(fmt: str, owner) -> Debate:
    values = {"format": fmt, **STARTS[fmt]}
    debate, errors = create_debate(values, owner)
    assert not errors, errors
    debate.status = Status.REFUSED
    debate.status_detail = "An investment decision is not debated without evidence."
    debate.save()
    return debate


@pytest.mark.parametrize("fmt", registry.names())
def test_a_refused_debate_of_any_format_offers_to_start_again_refilled(client, alice, fmt):
    debate = refused(fmt, alice)
    page = client.get(f"/debates/{debate.pk}/", **EN).content.decode()
    link = re.search(r'<a class="button" id="start-again" href="([^"]+)">([^<]+)</a>', page)
    assert link and unescape(link.group(1)) == f"/debates/new/?from={debate.pk}"
    assert link.group(2) == "Start again with this question"

    form = client.get(unescape(link.group(1)), **EN).content.decode()
    textarea = re.search(r'<textarea name="topic"[^>]*>(.*?)</textarea>', form, re.S)
    assert unescape(textarea.group(1)) == STARTS[fmt]["topic"]
    assert f'<option value="{fmt}" selected>' in form
    assert f'data-format="{fmt}"' in form  # the format's own part, its personas and options
    for slug in STARTS[fmt].get("personas", []):
        assert re.search(rf'<input type="checkbox" name="personas" value="{slug}" id="persona-{slug}" checked>', form)
    assert 'class="form-errors"' not in form, "a start that ran is refilled without errors"


def test_the_owner_gets_the_options_back(client, alice):
    debate = refused("panel", alice)
    form = client.get(f"/debates/new/?from={debate.pk}", **EN).content.decode()
    evidence = re.search(r'<textarea name="evidence"[^>]*>(.*?)</textarea>', form, re.S)
    assert evidence and unescape(evidence.group(1)).strip() == "Gross margin: 75%"
    assert re.search(r'<option value="light" selected>', form)


def test_someone_else_gets_the_question_only_or_nothing(client, alice, bob, staff):
    from django.contrib.auth.models import Permission

    debate = refused("panel", alice)
    client.force_login(bob)  # may not see it: the form is the empty one
    form = client.get(f"/debates/new/?from={debate.pk}", **EN).content.decode()
    assert "Nvidia" not in form and "Gross margin" not in form
    staff.user_permissions.add(Permission.objects.get(codename="view_all_debates"))
    client.force_login(staff)  # sees every debate, controls none of others'
    form = client.get(f"/debates/new/?from={debate.pk}", **EN).content.decode()
    assert "Should we raise our Nvidia position" in form and "Gross margin" not in form
    assert not re.search(r'name="personas" value="osborn" id="persona-osborn" checked', form)
    for junk in ("abc", "99999", ""):
        assert client.get("/debates/new/", {"from": junk}, **EN).status_code == 200
