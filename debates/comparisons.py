"""Is the debate worth it? Its conclusion against a single answer at about the same cost, judged
blind by the reader, and the tally of those votes.

The single answer is one strong prompt to the debate's priciest model (the seat model with the
highest output price; the debate's default model when no price is known), with an output allowance
that brings its cost up to the debate's: (debate's cost − the prompt's cost) ÷ the output price.
Where no price is known (or the local model's, which is free) the allowance matches tokens instead:
the debate's total tokens minus the prompt's. Either way it stays within 200–4,000 tokens (what one
reply can hold). The two are shown as A and B in an order drawn at random for each comparison.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
from collections import defaultdict

from channels.db import database_sync_to_async
from django.utils import timezone

from debates import clients
from debates.models import Comparison, Debate
from debates.providers.base import ProviderError
from debates.runner import debate_loop

log = logging.getLogger(__name__)

MIN_TOKENS, MAX_TOKENS = 200, 4000
ARMS = ("debate", "single")
VOTE = "vote"  # the optional third arm: self-consistency, k samples and a merge, the same allowance
SINGLE_SYSTEM = (
    "你是一位资深顾问，独自回答用户的问题：先给结论，再给理由，列出最强的反对意见并回应，最后给出可执行的建议。"
    "用提问所用的语言作答。Answer in the language of the question."
)


def conclusion_of(debate: Debate) -> str:
    """What the debate concluded: its report's own sections, without the format's headings or
    the personas' speeches (the reader judges the answer, not who gave it)."""
    report = getattr(debate, "report", None)
    if report is None:
        return ""
    sections = report.data.get("sections", [])
    bodies = [
        s.get("body", "") for s in sections if s.get("part", "verdict") == "verdict" and s.get("key") != "sources"
    ]
    return "\n\n".join(b.strip() for b in bodies if b.strip())


def strongest(pool) -> object:
    """The model a single answer is asked of: the highest output price among the debate's
    models (a person's seat is no model), else the default."""
    models = [c for c in pool.all() if not c.awaits_human]
    priced = [c for c in models if c.price is not None and c.price[1] > 0]
    return max(priced, key=lambda c: c.price[1]) if priced else pool.default


def allowance(debate: Debate, price, prompt_tokens: int, window: int | None = None) -> tuple[int, str]:
    """(max_tokens, the rule used): equal cost where prices are known, equal tokens otherwise;
    never more than the model's context window leaves after the prompt."""
    if price is not None and price[1] > 0 and debate.cost > 0:
        left = debate.cost - prompt_tokens * price[0] / 1_000_000
        tokens, rule = int(left * 1_000_000 / price[1]), "equal cost"
    else:
        tokens, rule = debate.total_tokens - prompt_tokens, "equal tokens"
    ceiling = MAX_TOKENS if not window else max(MIN_TOKENS, min(MAX_TOKENS, window - prompt_tokens - 64))
    return max(MIN_TOKENS, min(ceiling, tokens)), rule


def start(debate: Debate, owner, *, vote: bool = False) -> Comparison:
    """A new comparison, its A/B(/C) order drawn now; the other answers are written in the
    background."""
    order = [*ARMS, VOTE] if vote else list(ARMS)
    random.SystemRandom().shuffle(order)
    comparison = Comparison.objects.create(
        debate=debate, owner=owner, order=order, arms={"debate": {"text": conclusion_of(debate)}}
    )
    coroutine = answer(comparison.pk)
    contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, debate_loop.loop())
    return comparison


def _load(comparison_id: int):
    comparison = Comparison.objects.select_related("debate").get(pk=comparison_id)
    debate = comparison.debate
    return comparison, debate, clients.clients_for(debate)


async def answer(comparison_id: int) -> str:
    from debates import evaluation  # (it builds on this module)

    comparison, debate, pool = await database_sync_to_async(_load)(comparison_id)
    client = strongest(pool)
    context = debate.options.get("user_context", "")
    question = evaluation.Question(
        "compare", debate.question + (f"\n\n## 用户背景 User context\n{context}" if context else "")
    )
    try:
        await client.ensure_ready()
        arms = {**comparison.arms, "single": _record(await evaluation.single_arm(client, question, debate), client)}
        if VOTE in comparison.order:
            arms[VOTE] = _record(await evaluation.vote_arm(client, question, debate), client)
        fields = {"state": Comparison.State.READY, "arms": arms, "model": client.describe()}
    except ProviderError as error:
        fields = {"state": Comparison.State.FAILED, "error": str(error)}
    finally:
        await clients.close(pool)
    await Comparison.objects.filter(pk=comparison_id).aupdate(**fields)
    return fields["state"]


def _record(answer, client) -> dict:
    """An arm as the comparison keeps it: its text, what it cost, and the allowance's rule."""
    fields = ("text", "prompt_tokens", "completion_tokens", "cost", "max_tokens", "rule")
    return {"model": client.describe(), **{name: getattr(answer, name) for name in fields}}


def vote(comparison: Comparison, choice: str, reason: str = "") -> bool:
    """Record the reader's choice once (A, B or tie); false when it was already voted."""
    labels = "ABC"[: len(comparison.order)]
    if (choice not in labels and choice != "tie") or comparison.state != Comparison.State.READY:
        return False
    winner = "" if choice == "tie" else comparison.order[labels.index(choice)]
    return bool(
        Comparison.objects.filter(pk=comparison.pk, vote="").update(
            vote=choice, winner=winner, reason=reason.strip()[:2000], voted_at=timezone.now()
        )
    )


def kind_of(debate: Debate) -> str:
    """The question's type as the debate judged it (the panel's proposition type), else ""."""
    report = getattr(debate, "report", None)
    return (report.data.get("proposition_type", "") if report else "") or ""


def tally(comparisons) -> list[dict]:
    """Votes by format, model and question type: the debate's wins, the single answer's, ties."""
    rows: dict[tuple, dict] = defaultdict(lambda: {"debate": 0, "single": 0, VOTE: 0, "tie": 0})
    for c in comparisons:
        key = (c.debate.format, c.model, kind_of(c.debate))
        rows[key]["tie" if not c.winner else c.winner] += 1
    from debates.engine import registry

    return [
        {"format": f, "label": registry.get(f).label, "model": m, "kind": k, **counts, "total": sum(counts.values())}
        for (f, m, k), counts in sorted(rows.items())
    ]
