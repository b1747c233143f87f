"""The moderated format's suggestion box and submit on the loaded bundled libraries: an ordinary
business question, in English or in Chinese, in either UI language, is never refused: the box names
two or more personas and says why, and Start with nobody chosen starts the debate."""

from __future__ import annotations

import re

import pytest

from debates.models import Debate

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs")]

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
QUESTIONS = [
    "Should we raise prices 10% next quarter?",
    "Should our 12-person agency hire a salesperson or a second designer?",
    "Should we expand into Southeast Asia next year?",
    "Should our team go fully remote?",
    "我们公司明年该不该进入东南亚市场？",
    "我们这个12人的小公司应该招一个销售还是再招一个设计师？",
    "公司该不该全员远程办公？",
]


def box(client, question: str, **headers) -> str:
    response = client.get("/debates/suggest/", {"topic": question, "format": "moderated"}, **headers)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_box_seats_two_and_says_why_and_the_submit_starts(client, no_runs, question):
    for headers in (EN, ZH):
        html = box(client, question, **headers)
        assert "data-refusal" not in html, html
        assert len(set(re.findall(r'data-slug="([^"]+)"', html))) >= 2, html
        assert re.search(r'<span class="note">\(.+\)</span>', html), "the box says why these sit"
    response = client.post("/debates/new/", {"topic": question, "format": "moderated"}, **EN)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Debate.objects.count() == 1 and len(no_runs) == 1
    Debate.objects.all().delete()


def test_the_box_says_when_the_pair_was_filled(client):
    html = box(client, "Should our team go fully remote?", **EN)
    assert re.findall(r'data-slug="([^"]+)"', html) == ["confucius", "charlie-munger"]
    assert "Only Confucius matches this question&#x27;s keywords, so Charlie Munger joins as a general voice." in html
    html = box(client, "我们这个12人的小公司应该招一个销售还是再招一个设计师？", **EN)
    # The note names them as its reader knows them, as the cards below it do (the keywords are
    # the question's own words).
    assert "keywords matched: Charlie Munger — 销售; Steve Jobs — 设计" in html
    chinese = box(client, "Should our team go fully remote?", **ZH)
    assert "孔子" in chinese and "Confucius" not in chinese, chinese


def test_the_duels_pair_is_named_as_its_reader_knows_it(client):
    response = client.get(
        "/debates/suggest/", {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}, **EN
    )
    note = re.search(r'<span class="note">\((.+?)\)</span>', response.content.decode()).group(1)
    assert re.match(r"[A-Z][\w -]+ vs [A-Z][\w -]+ · ", note) and not re.search(
        "[\u4e00-\u9fff]", note.split(" · ")[0]
    ), note
