"""The report as readers get it: every promised section present (saying so when empty), warnings
and the ledger once, pictures drawn on the server, readable and unique download names, the
Markdown transcript with its rounds and summaries, all in the reader's language."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import translation
from django.utils.html import escape

from debates import charts, runner
from debates.api import tokens
from debates.forms import create_debate
from debates.models import Debate
from debates.templatetags.agora import tr

pytestmark = pytest.mark.django_db(transaction=True)


async def run(owner, values: dict) -> Debate:
    debate, errors = await sync_to_async(create_debate)(values, owner=owner)
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    return await Debate.objects.aget(pk=debate.pk)


async def get(user, path: str, language: str = "en") -> tuple[str, dict]:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    await sync_to_async(client.force_login)(user)
    response = await sync_to_async(client.get)(path)
    assert response.status_code == 200, path
    return response.content.decode(), response.headers


async def test_every_section_is_there_even_when_empty_and_warnings_show_once(libraries, fast_llm, alice):
    # The fake model writes no section headings: consensus and the rest are empty, and say so.
    debate = await run(
        alice, {"topic": "我们的客服产品要不要引入 RAG 知识库？", "format": "roundtable", "no_interrupt": True}
    )
    page, _ = await get(alice, f"/debates/{debate.pk}/report/")
    for heading in ("Consensus", "Disagreements", "Action guide", "Risks"):
        assert f">{heading}</h3>" in page, heading
    assert "No consensus was reached." in page
    with translation.override("en"):  # as the English page says them (names in English)
        warnings = [str(escape(tr(w))) for w in debate.warnings]
    assert warnings, "the fake model's replies leave confidences unstated: warnings to show"
    for text in warnings:
        assert page.count(text.split(":")[0]) >= 1
    assert page.count(">Warnings</h2>") == 1
    first = warnings[0]
    assert page.count(first) == 1, "a warning is listed once (not again inside the verdict)"
    assert page.count(">Token ledger</h2>") == 1 and "Prompt " not in page, "the ledger once, as a table"

    live, _ = await get(alice, f"/debates/{debate.pk}/")
    assert live.count(first) == 1

    chinese, _ = await get(alice, f"/debates/{debate.pk}/report/", "zh-hans")
    assert ">共识</h3>" in chinese and "未达成共识。" in chinese and ">Consensus</h3>" not in chinese


async def test_pictures_and_the_markdown_transcript(libraries, fast_llm, alice):
    debate = await run(alice, {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "2"})
    page, _ = await get(alice, f"/debates/{debate.pk}/report/")
    assert page.count('<svg class="chart"') == 2, "positions across rounds, and tokens per speaker"
    assert 'aria-label="Positions across rounds"' in page and 'aria-label="Tokens per speaker"' in page

    # A file is in the debate's language (its question's, Chinese here) whoever downloads it.
    transcript, headers = await get(alice, f"/debates/{debate.pk}/transcript.md")
    assert re.search(r"^### 对辩 · 第 1 轮 · .+$", transcript, re.M), "each speech under its round"
    assert re.search(r"^### 对辩 · 第 2 轮 · .+$", transcript, re.M)
    assert transcript.count("*小结*: ") >= 4, "each speech with its summary"
    assert "## Token 账本" in transcript
    assert re.fullmatch(
        rf'attachment; filename="nian-fo-yu-can-chan-na-duel-transcript-\d{{4}}-\d{{2}}-\d{{2}}-{debate.pk}\.md"',
        headers["Content-Disposition"],
    )


async def test_download_names_are_readable_and_unique(libraries, fast_llm, alice):
    first = await run(alice, {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "1"})
    second = await run(alice, {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "1"})
    names = set()
    for debate in (first, second):
        for path in ("export.md", "report.md", "transcript.md", "export.json"):
            _, headers = await get(alice, f"/debates/{debate.pk}/{path}")
            names.add(headers["Content-Disposition"])
    assert len(names) == 8, names
    assert all("nian-fo-yu-can-chan-na" in name for name in names)


async def test_the_page_and_the_api_name_a_download_alike(libraries, fast_llm, alice):
    """One Content-Disposition for every door (`exports.attachment`): the page's and the API's
    downloads of one debate carry the same name."""
    debate = await run(alice, {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": "1"})
    _row, token = await sync_to_async(tokens.issue)(alice, "exports")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    for path, query in (("export.md", ""), ("export.md", "?part=transcript"), ("export.json", "")):
        _, page = await get(alice, f"/debates/{debate.pk}/{path.replace('export', 'transcript') if query else path}")
        reply = await sync_to_async(api.get)(f"/api/v1/debates/{debate.pk}/{path}{query}")
        assert reply.status_code == 200, path
        assert reply.headers["Content-Disposition"] == page["Content-Disposition"], (path, query)
        assert page["Content-Disposition"].startswith('attachment; filename="nian-fo-yu-can-chan-na-duel-')


@pytest.fixture
def english():
    with translation.override("en"):
        yield


def test_charts_escape_what_they_draw(english):
    data = {
        "turns": [
            {"key": "a", "round": 1, "phase": "x", "speaker_name": "<script>x</script>", "data": {"moved": True}},
            {"key": "b", "round": 1, "phase": "x", "speaker_name": "B&B", "data": {"moved": False}},
        ],
        "ledger": {"cap": 100, "turns": {"a": {"prompt": 10, "completion": 5}, "b": {"prompt": 3, "completion": 2}}},
    }
    drawn = str(charts.positions(data)) + str(charts.ledger(data))
    assert "<script" not in drawn and "&lt;script&gt;" in drawn and "B&amp;B" in drawn
    assert drawn.count("<svg") == 2 and 'role="img"' in drawn
    assert "20 of 100" in drawn, "the whole run against the cap"


def test_a_chart_with_nothing_to_show_is_not_drawn():
    assert charts.positions({"turns": []}) == "" and charts.ledger({}) == ""
    # Confidences of the first round only: nothing moved, nothing to draw.
    only_r1 = {"turns": [{"key": "r1:a", "round": 1, "speaker_name": "A", "data": {"confidence": "high"}}]}
    assert charts.roundtable_confidence(only_r1) == ""
