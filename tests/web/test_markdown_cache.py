"""Rendered Markdown is kept (debates.rendering.TextCache): a speech already drawn is not drawn
again on the next page load, the result is the same as a fresh rendering, the words drawn around
it (the icons' labels) follow each viewer's language, and the cache keeps within its budget."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import translation

from debates import rendering
from debates.rendering import TextCache, render_markdown
from tests.security.test_admission import finished_duel
from tests.web.test_icons import VETO

HOSTILE = (
    "**bold** <script>alert(1)</script> [x](javascript:alert(2)) # not a heading\n\n# Heading\n\n| a |\n|---|\n| 1 |"
)


@pytest.fixture
def fresh_cache(monkeypatch):
    cache = TextCache(1_000_000)
    monkeypatch.setattr(rendering, "_rendered", cache)
    return cache


def test_a_kept_rendering_is_the_fresh_one_at_every_heading_level(fresh_cache):
    for top in (1, 2, 4):
        first = render_markdown(HOSTILE, top)
        assert render_markdown(HOSTILE, top) == first == rendering._sanitised(HOSTILE, top)
        assert "<script" not in first and "javascript:" not in first
        assert f"<h{top}>Heading</h{top}>" in first
    assert len(fresh_cache._items) == 3  # one per level: a level is part of the key


def test_the_icons_labels_follow_the_language_of_each_drawing(fresh_cache):
    with translation.override("en"):
        english = render_markdown(VETO)
    with translation.override("zh-hans"):
        chinese = render_markdown(VETO)
    assert 'aria-label="Vetoed"' in english and 'aria-label="Vetoed"' not in chinese
    assert len(fresh_cache._items) == 1  # the same text, kept once, its labels drawn per viewer


def test_the_budget_holds_and_the_least_recently_used_goes_first():
    cache = TextCache(160)  # 20 characters an entry: eight fit
    keys = [(name * 10, 1) for name in "abcdefghij"]
    for key in keys[:3]:
        cache.put(key, key[0].upper())  # a, b, c
    assert cache.get(keys[0]) == "A" * 10  # used: now the most recent
    for key in keys[3:9]:  # d to i: the ninth entry pushes out b, the least recently used
        cache.put(key, key[0].upper())
    assert cache.get(keys[1]) is None and cache.get(keys[2]) == "C" * 10
    cache.put(keys[9], "J" * 10)  # c was read just now, so a goes
    assert cache.get(keys[0]) is None and cache.get(keys[2]) == "C" * 10
    assert cache.size == 160 == sum(len(k[0]) + len(v) for k, v in cache._items.items())
    cache.put(("k" * 10, 1), "K" * 40)  # over an eighth of the budget: drawn, not kept
    assert cache.get(("k" * 10, 1)) is None and cache.size == 160


@pytest.mark.django_db(transaction=True)
def test_a_second_load_of_the_page_draws_no_speech_again(libraries, alice, fresh_cache, monkeypatch):
    debate = finished_duel(alice)
    debate.turns.update(text="## The first speech\n\nWith **Markdown** in it.")
    drawn = []
    original = rendering._sanitised
    monkeypatch.setattr(rendering, "_sanitised", lambda text, top: drawn.append(text) or original(text, top))
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    first = client.get(f"/debates/{debate.pk}/").content.decode()
    assert "<strong>Markdown</strong>" in first and any("The first speech" in text for text in drawn)
    drawn.clear()
    second = client.get(f"/debates/{debate.pk}/").content.decode()
    assert "<strong>Markdown</strong>" in second and drawn == []
