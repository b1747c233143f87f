"""Persona names in the reader's language wherever a person reads them (the start form, the live
page and its frames, the report, the JSON doors with both names), exports wholly in the debate's
language whoever downloads them, and the API in its token owner's language when the request asks
for none. Runs real debates on the fake OpenAI server."""

from __future__ import annotations

import importlib
import json

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.test import Client
from django.utils import translation

from debates import frames, runner
from debates.api import tokens
from debates.forms import create_debate
from debates.models import Debate, Turn

pytestmark = pytest.mark.django_db(transaction=True)

CHINESE_DUEL = {
    "topic": "念佛与参禅，哪条路更适合现代人修行？",
    "format": "duel",
    "rounds": "1",
    "personas": ["huineng", "yinguang"],
}
ENGLISH_DUEL = {
    "topic": "Is reciting the Buddha's name or Chan meditation the better path today?",
    "format": "duel",
    "rounds": "1",
    "personas": ["huineng", "yinguang"],
}


async def run(owner, values: dict) -> Debate:
    debate, errors = await sync_to_async(create_debate)(values, owner=owner)
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    return await Debate.objects.aget(pk=debate.pk)


async def get(user, path: str, language: str) -> str:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    await sync_to_async(client.force_login)(user)
    response = await sync_to_async(client.get)(path)
    assert response.status_code == 200, path
    return response.content.decode()


def test_the_start_form_offers_personas_in_the_readers_language(libraries, alice):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    english = client.get("/debates/new/", {"format": "duel"}).content.decode()
    assert '<b class="name">Huineng</b>' in english and '<b class="name">慧能大师</b>' not in english
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(alice)
    chinese = client.get("/debates/new/", {"format": "duel"}).content.decode()
    assert '<b class="name">慧能大师</b>' in chinese and '<b class="name">Huineng</b>' not in chinese


async def test_a_chinese_debate_reads_in_each_readers_language(libraries, fast_llm, alice):
    debate = await run(alice, CHINESE_DUEL)
    turn = await Turn.objects.filter(debate=debate, speaker_slug="huineng").afirst()
    assert (turn.speaker_name, turn.speaker_name_en) == ("慧能大师", "Huineng"), "the turn keeps both names"

    live = await get(alice, f"/debates/{debate.pk}/", "en")
    assert f'id="turn-{turn.pk}-speaker">Huineng<' in live
    live_zh = await get(alice, f"/debates/{debate.pk}/", "zh-hans")
    assert f'id="turn-{turn.pk}-speaker">慧能大师<' in live_zh

    # The live frames are drawn once per language: each group reads its own names.
    drawn = await sync_to_async(frames.in_every_language)(lambda: frames.turn(turn, new=False))
    assert ">Huineng<" in drawn["en"] and "慧能大师" not in drawn["en"]
    assert ">慧能大师<" in drawn["zh-hans"] and "Huineng" not in drawn["zh-hans"]

    report = await get(alice, f"/debates/{debate.pk}/report/", "en")
    assert "<td>Huineng</td>" in report, "the ledger names the speaker in English"
    assert "Huineng" in report.split('aria-label="Tokens per speaker"', 1)[1], "and so does the chart"


async def test_a_chinese_export_is_chinese_from_the_english_ui(libraries, fast_llm, alice):
    debate = await run(alice, CHINESE_DUEL)
    export = await get(alice, f"/debates/{debate.pk}/export.md", "en")
    for chinese in ("**问题**", "# 实录", "## 全部发言", "慧能大师", "印光大师", "*小结*", "## Token 账本"):
        assert chinese in export, chinese
    for english in ("**Question**", "# Transcript", "All speeches", "Huineng", "Yinguang", "*Summary*", "Token ledger"):
        assert english not in export, english

    payload = json.loads(await get(alice, f"/debates/{debate.pk}/export.json", "en"))
    seat = next(s for s in payload["seats"] if s["persona"] == "huineng")
    assert seat["name"] == "慧能大师" and seat["names"] == {"zh-hans": "慧能大师", "en": "Huineng"}
    turn = next(t for t in payload["turns"] if t["speaker"] == "huineng")
    assert turn["speaker_name"] == "慧能大师" and turn["speaker_names"]["en"] == "Huineng"


async def test_an_english_export_is_english_from_the_chinese_ui(libraries, fast_llm, alice):
    debate = await run(alice, ENGLISH_DUEL)
    export = await get(alice, f"/debates/{debate.pk}/export.md", "zh-hans")
    for english in ("**Question**", "# Transcript", "## All speeches", "Huineng", "Yinguang", "## Token ledger"):
        assert english in export, english
    for chinese in ("**问题**", "实录", "全部发言", "慧能", "印光", "账本"):
        assert chinese not in export, chinese
    report = await get(alice, f"/debates/{debate.pk}/report/", "zh-hans")
    assert "<td>慧能大师</td>" in report, "the page stays in its reader's language"


async def test_the_api_answers_in_the_token_owners_language(libraries, fast_llm, alice):
    debate = await run(alice, CHINESE_DUEL)
    with translation.override("en"):  # made on the token page by someone reading English
        english_row, english = await sync_to_async(tokens.issue)(alice, "english")
    with translation.override("zh-hans"):
        chinese_row, chinese = await sync_to_async(tokens.issue)(alice, "chinese")
    assert (english_row.language, chinese_row.language) == ("en", "zh-hans")

    async def api(token, path, **headers):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
        return await sync_to_async(client.get)(f"/api/v1{path}")

    def huineng(reply):
        return next(t for t in reply.json()["turns"] if t["speaker"] == "huineng")

    reply = await api(english, f"/debates/{debate.pk}")
    assert reply.headers["Content-Language"] == "en"
    assert huineng(reply)["speaker_name"] == "Huineng"
    assert huineng(reply)["speaker_names"] == {"zh-hans": "慧能大师", "en": "Huineng"}
    missing = await api(english, "/debates/999999")
    assert missing.status_code == 404 and not any("\u4e00" <= ch <= "\u9fff" for ch in missing.json()["detail"])

    assert huineng(await api(chinese, f"/debates/{debate.pk}"))["speaker_name"] == "慧能大师"
    # A request that says its language is answered in it, whoever owns the token.
    asked = await api(english, f"/debates/{debate.pk}", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert asked.headers["Content-Language"] == "zh-hans" and huineng(asked)["speaker_name"] == "慧能大师"
    asked = await api(chinese, f"/debates/{debate.pk}", HTTP_ACCEPT_LANGUAGE="en")
    assert huineng(asked)["speaker_name"] == "Huineng"
    # Exports keep the debate's language through the API too.
    export = (await api(english, f"/debates/{debate.pk}/export.md")).content.decode()
    assert "## 全部发言" in export and "Huineng" not in export


async def test_turns_spoken_before_the_english_names_get_them(libraries, fast_llm, alice):
    debate = await run(alice, CHINESE_DUEL)
    await Turn.objects.filter(debate=debate).aupdate(speaker_name_en="")
    migration = importlib.import_module("debates.migrations.0022_english_names")
    await sync_to_async(migration.fill)(apps, None)
    names = {t.speaker_slug: t.speaker_name_en async for t in Turn.objects.filter(debate=debate)}
    assert names["huineng"] == "Huineng" and names["yinguang"] == "Yinguang"
