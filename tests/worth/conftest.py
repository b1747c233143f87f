"""Shared by the worth-it tests: a duel created as the start form would, and run."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from debates import runner
from debates.forms import create_debate
from debates.models import Debate

QUESTION = "念佛与参禅，哪条路更适合现代人修行？"


async def duel(owner, *, expect: str = "done", **values) -> Debate:
    """A duel of 慧能 and 印光 (one round unless `values` say otherwise), run to `expect`."""
    fields = {"topic": QUESTION, "format": "duel", "personas": ["huineng", "yinguang"], "rounds": "1", **values}
    made, errors = await sync_to_async(create_debate)(fields, owner=owner)
    assert not errors, errors
    assert await runner.execute(made.pk) == expect
    return await Debate.objects.select_related("report").aget(pk=made.pk)
