"""A warning names a persona in its reader's language: a Chinese duel's "cited no source" reads
"Huineng …" on an English page and "慧能大师 …" on a Chinese one, while the report's own Markdown
(the exports) keeps the debate's language."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates import runner
from debates.engine.i18n import Text, for_reader, named
from debates.forms import create_debate
from debates.models import Debate


def test_a_name_inside_a_message_is_the_readers():
    message = Text(
        "%(speaker)s cited no source in round %(n)d.", {"speaker": named("慧能大师", "Huineng", "zh"), "n": 1}
    )
    assert str(message) == "慧能大师 cited no source in round 1."  # the debate's language, where the engine renders it
    stored = Text.from_dict(message.as_dict())
    assert for_reader(stored, english=True).render() == "Huineng cited no source in round 1."
    assert for_reader(stored, english=False).render() == "慧能大师 cited no source in round 1."
    # A persona without an English name keeps the one it has.
    assert for_reader(Text("%(s)s", {"s": named("某人", "", "zh")}), english=True).render() == "某人"


@pytest.mark.django_db(transaction=True)
async def test_a_chinese_duels_warnings_name_the_speakers_as_each_reader_knows_them(libraries, fast_llm, alice):
    debate, errors = await sync_to_async(create_debate)(
        {
            "topic": "念佛与参禅，哪条路更适合现代人修行？",
            "format": "duel",
            "personas": ["huineng", "yinguang"],
            "rounds": 1,
        },
        owner=alice,
    )
    assert not errors and await runner.execute(debate.pk) == "done"
    stored = (await Debate.objects.aget(pk=debate.pk)).warnings
    assert any(w.get("code") == "uncited" for w in stored), stored  # the fake server cites nothing
    pages = {}
    for language in ("en", "zh-hans"):
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        await sync_to_async(client.force_login)(alice)
        page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/")).content.decode()
        pages[language] = re.search(r'<ul[^>]*class="warnings"[^>]*>(.*?)</ul>', page, re.DOTALL).group(1)
    assert "Huineng cited no source" in pages["en"] and "慧能大师" not in pages["en"], pages["en"]
    assert "慧能大师 在第 1 轮没有引用出处" in pages["zh-hans"], pages["zh-hans"]
    # The report's Markdown (what the exports carry) is in the debate's language, names included.
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    exported = (await sync_to_async(client.get)(f"/debates/{debate.pk}/export.md")).content.decode()
    assert "慧能大师" in exported and "Huineng cited" not in exported
