"""The live page's stage says the round once: a moderated debate's header read "Round 1 of 1 · Round 1 ·
Opening statements" (the counter, then the phase title that names its round again)."""

from __future__ import annotations

import re

import pytest

from debates.engine.i18n import text
from debates.models import Status
from tests.web.test_audience import make_duel, viewer


def stage_line(client, debate, language: str) -> str:
    html = client.get(f"/debates/{debate.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    progress = html.split('<span class="progress">', 1)[1].split("</span>", 1)[0]
    return re.sub(r"\s+", " ", progress).strip()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("title", "english", "chinese"),
    [
        (text("Round %(n)d", n=1), "Round 1 of 1", "第 1 轮 / 共 1 轮"),
        (
            text("Round %(n)d · %(name)s", n=1, name=text("Opening statements")),
            "Round 1 of 1 · Opening statements",
            "第 1 轮 / 共 1 轮 · ",
        ),
    ],
)
def test_the_stage_names_the_round_once(libraries, alice, title, english, chinese):
    debate = make_duel(alice)
    debate.status, debate.rounds_planned = Status.RUNNING, 1
    debate.phases = [{"position": 1, "round": 1, "phase": "speech", "title": title.as_dict()}]
    debate.save(update_fields=["status", "rounds_planned", "phases"])
    client = viewer(alice)
    assert stage_line(client, debate, "en") == english
    zh = stage_line(client, debate, "zh-hans")
    assert zh.startswith(chinese), zh
    assert zh.count("第 1 轮") == 1, zh
