"""Is the debate worth it? Its conclusion against a single answer at about the same cost, judged
blind by the reader, and the tally of those votes.

The single answer is one strong prompt to the debate's priciest model (the seat model with the
highest output price; the debate's default model when no price is known), with an output allowance
that brings its cost up to the debate's: (debate's cost − the prompt's cost) ÷ the output price.
Where no price is known (or the local model's, which is free) the allowance matches tokens instead:
the debate's total tokens minus the prompt's. Either way it stays within 200–4,000 tokens (what one
reply can hold). The two are shown as A and B in an order drawn at random for each comparison.

Blind means the reader cannot tell which is which before the vote. The debate's conclusion is the
text of the report the reader has just read, in the debate's voice and language, so neither arm is
shown as it was written: the same model rewrites every arm with the same prompt (`RENDER_SYSTEM`)
into one neutral form (conclusion, reasons, objections answered, what to do), in the question's
language, keeping every claim and adding none. What the page shows before the vote is those
renderings and nothing of the report (no link to it, no verdict).

A comparison spends tokens, so it is admitted like a debate (`debates.admission`, the door
"compare"): it counts against its owner's running limit while it is written (within
`admission.comparison_deadline`), one comparison of a debate at a time, and what it may spend is what the
debate's token and money budgets leave after the debate and its earlier comparisons.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import random
from collections import defaultdict
from datetime import timedelta

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from debates import admission, baselines, clients
from debates.baselines import MAX_TOKENS, MIN_TOKENS, conclusion_of, single_messages
from debates.models import Comparison, Debate
from debates.providers.base import ProviderError, estimate_messages_tokens, estimate_tokens
from debates.runner import debate_loop
from debates.specs import question_language

log = logging.getLogger(__name__)

COMPARISON_ARMS = ("debate", "single")  # what every comparison shows (in an order drawn for it)
VOTE = "vote"  # the optional third arm: self-consistency, k samples and a merge, the same allowance
RENDER_SYSTEM = (
    "You are given a question and one answer to it. Rewrite the answer as a self-contained answer to "
    "the question, in this order: the conclusion; the reasons; the strongest objections, each with its "
    "reply; what to do. Keep every position, claim, figure and recommendation of the answer and add none "
    "of your own; do not say where it came from (no speakers, names, rounds, debate, report or headings "
    "of its own). Plain paragraphs. Write it in {language}."
)
LANGUAGES = {"zh-hans": "简体中文 (Simplified Chinese)", "en": "English"}


def fail_interrupted() -> int:
    """At the start of the process that writes every comparison (in-process mode): the ones a
    restart interrupted are failed, not left running."""
    return Comparison.objects.filter(state=Comparison.State.RUNNING).update(
        state=Comparison.State.FAILED, error="interrupted by a restart"
    )


def fail_overdue() -> int:
    """Where several processes write comparisons (`AGORA_PROCESSES` > 1), none can fail the
    others' at its start: a sibling may be writing them. One still running a lease's length past
    its deadline is no one's (`write` ends every live one by then): it is failed, so its page
    says so instead of "running" for ever. Swept with the orphans (`control.watch_orphans`)."""
    since = timezone.now() - timedelta(seconds=admission.comparison_deadline() + settings.AGORA_LEASE_SECONDS)
    return Comparison.objects.filter(state=Comparison.State.RUNNING, created_at__lt=since).update(
        state=Comparison.State.FAILED, error="interrupted by a restart"
    )


def strongest(pool) -> object:
    """The model a single answer is asked of: the highest output price among the debate's
    models (a person's seat is no model), else the default."""
    models = [c for c in pool.all() if not c.awaits_human]
    priced = [c for c in models if c.price is not None and c.price[1] > 0]
    return max(priced, key=lambda c: c.price[1]) if priced else pool.default


class BudgetTooSmall(Exception):
    """What the debate's budgets leave does not pay for a comparison."""


def budget_ceiling(left: admission.Left, client, question: str, conclusion: str, vote: bool) -> int | None:
    """The largest output allowance for the written arms whose whole comparison (their prompts,
    answers and renderings, the conclusion's rendering) stays within what the budgets leave,
    counted in tokens at the output price; None without a budget. An estimate: the model's token
    counts are known only afterwards."""
    total = left.output_tokens(client.price)
    if total is None:
        return None
    prompt = estimate_messages_tokens(single_messages(question))
    render = estimate_tokens(RENDER_SYSTEM) + estimate_tokens(question) + 16
    fixed = prompt + render + 2 * estimate_tokens(conclusion) + render  # single + debate's rendering
    per_token = 3  # the single answer's tokens are written, then read and written again
    if vote:
        fixed += 4 * prompt + render
        per_token += 4  # samples and merge (the merge reads the samples), then its rendering
    ceiling = (total - fixed) // per_token
    if ceiling < MIN_TOKENS:
        raise BudgetTooSmall(
            f"the debate's budgets leave about {total} tokens; a comparison needs about "
            f"{fixed + per_token * MIN_TOKENS}"
        )
    return ceiling


def start(debate: Debate, owner, *, vote: bool = False, door: str = "compare") -> Comparison:
    """A new comparison, its A/B(/C) order drawn now, admitted through `door` (raises
    `admission.Refused`, creating nothing); the answers are written in the background."""
    order = [*COMPARISON_ARMS, VOTE] if vote else list(COMPARISON_ARMS)
    random.SystemRandom().shuffle(order)
    with transaction.atomic():
        admission.admit(door, owner.pk if owner else None, spending_for=debate)
        if admission.comparisons_in_flight().filter(debate=debate).exists():
            # One at a time: each is then held to what the budgets left after the one before.
            raise admission.Refused(_("A comparison of this debate is still being written: wait for it to finish."))
        comparison = Comparison.objects.create(
            debate=debate, owner=owner, order=order, arms={"debate": {"original": conclusion_of(debate)}}
        )
    coroutine = answer(comparison.pk)
    contextvars.Context().run(asyncio.run_coroutine_threadsafe, coroutine, debate_loop.loop())
    return comparison


def _load(comparison_id: int):
    comparison = Comparison.objects.select_related("debate").get(pk=comparison_id)
    debate = comparison.debate
    # What the budgets leave, without this comparison (it has spent nothing yet).
    return comparison, debate, clients.clients_for(debate), admission.spend_for(debate)


async def answer(comparison_id: int) -> str:
    """Write the comparison's answers and their renderings, within `admission.comparison_deadline`."""
    deadline = admission.comparison_deadline()
    try:
        async with asyncio.timeout(deadline):
            fields = await _answer(comparison_id)
    except TimeoutError:
        fields = {"state": Comparison.State.FAILED, "error": f"not written within {deadline:g} s"}
    except Exception as error:  # noqa: BLE001 - whatever broke, the reader sees why, not "being written" until the deadline
        log.exception("comparison %s could not be written", comparison_id)
        fields = {"state": Comparison.State.FAILED, "error": f"could not be written: {type(error).__name__}: {error}"}
    await Comparison.objects.filter(pk=comparison_id).aupdate(**fields)
    return fields["state"]


async def _answer(comparison_id: int) -> dict:
    comparison, debate, pool, left = await database_sync_to_async(_load)(comparison_id)
    client = strongest(pool)
    context = debate.options.get("user_context", "")
    question = baselines.Question(
        "compare", debate.question + (f"\n\n## 用户背景 User context\n{context}" if context else "")
    )
    conclusion = comparison.arms["debate"]["original"]
    try:
        ceiling = budget_ceiling(left, client, question.question, conclusion, VOTE in comparison.order)
        await client.ensure_ready()
        arms = {
            "debate": {"original": conclusion},
            "single": _record(await baselines.single_arm(client, question, debate, budget=ceiling), client),
        }
        if VOTE in comparison.order:
            arms[VOTE] = _record(await baselines.vote_arm(client, question, debate, budget=ceiling), client)
        language = LANGUAGES[question_language(debate.question)]
        for arm in comparison.order:  # every arm through the same rendering, in the order shown
            rendered = await render(client, debate.question, arms[arm]["original"], language, f"{comparison_id}:{arm}")
            arms[arm]["text"], arms[arm]["rendering"] = rendered.text, _spent(rendered)
        return {"state": Comparison.State.READY, "arms": arms, "model": client.describe()}
    except ProviderError as error:
        return {"state": Comparison.State.FAILED, "error": str(error)}
    except BudgetTooSmall as error:
        return {"state": Comparison.State.FAILED, "error": str(error)}
    finally:
        await clients.close(pool)


def render_messages(question: str, text: str, language: str) -> list[dict]:
    return [
        {"role": "system", "content": RENDER_SYSTEM.format(language=language)},
        {"role": "user", "content": f"## Question\n{question}\n\n## The answer\n{text}"},
    ]


async def render(client, question: str, text: str, language: str, key: str):
    """One arm in the neutral form every arm is shown in: as long as it was, in `language`."""
    messages = render_messages(question, text, language)
    prompt = estimate_messages_tokens(messages)
    window = client.context_window
    ceiling = MAX_TOKENS if not window else max(MIN_TOKENS, min(MAX_TOKENS, window - prompt - 64))
    tokens = max(MIN_TOKENS, min(ceiling, estimate_tokens(text) * 5 // 4 + 64))
    return await baselines.ask(client, messages, tokens, f"compare:{key}:render")


def _spent(answer) -> dict:
    return {"prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens, "cost": answer.cost}


def _record(answer, client) -> dict:
    """An arm as the comparison keeps it: its own text, what it cost, and the allowance's rule
    (`text`, what is shown, is its rendering)."""
    fields = ("prompt_tokens", "completion_tokens", "cost", "max_tokens", "rule")
    return {"model": client.describe(), "original": answer.text, **{name: getattr(answer, name) for name in fields}}


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
