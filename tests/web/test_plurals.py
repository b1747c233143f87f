"""Counts read as the reader's language counts them (ngettext): the audience's moderation list said
"(1 votes, 1 questions)" of a viewer who had voted once and asked once."""

from __future__ import annotations

import pytest

from tests.web.test_audience import make_duel, post, sides, viewer

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_vote_and_one_question_are_singular(libraries, alice):
    debate = make_duel(alice)
    someone = viewer(debate=debate)
    post(someone, debate, "vote", {"choice": sides(debate)[0]})
    post(someone, debate, "ask", {"text": "What of a lay person with one free hour a day?"})
    page = viewer(alice).get(f"/debates/{debate.pk}/").content.decode()
    assert "Who took part" in page
    assert "1 votes" not in page and "1 questions" not in page
    assert "1 vote · 1 question" in page
