"""Admission: the one check every way of spending a model's tokens passes before its first call.

A *door* is anything a person (or, for the terminal, the operator) can use to make Agora call a
model: a new debate, Resume, Retry turn, Continue at the checkpoint, a person's turn and its
missed deadline, Regenerate, Fork, Swap sides, Compare with a single answer, the L3 characters
distilled on the start form, and the terminal's `manage.py debate` and `manage.py evaluate`. Each
is named in `DOORS` and calls `admit` with its name, in the same transaction that writes the rows
which make the spending happen (a debate marked queued, a comparison created, a distillation
begun), so two requests of one owner cannot both pass:

- **The running limit** (`AGORA_MAX_RUNNING_PER_USER`): what runs for the owner is every debate of
  theirs that is queued, loading or running, plus every comparison of theirs still being written
  (within its deadline, `comparison_deadline`), and every distillation of L3 characters of theirs
  still in its Start request (within `distillation_deadline`). Debates and comparisons without an
  owner (the terminal's) are not counted.
- **The budgets**: a debate's own run is held to its token cap and money budget turn by turn by
  the engine's ledger (which knows the turns that must run whatever happens, such as a verdict),
  earlier attempts included. What is spent *for* a debate outside its run (a comparison) is held
  here to what the debate's budgets leave: `spend_for` says how much that is, and a door with
  nothing left is refused.

Serialisation: on PostgreSQL the owner's user row is locked first; on SQLite every transaction is
`BEGIN IMMEDIATE` (settings), which already holds the database's write lock from its first
statement.

Every door still to come (the OpenAI-compatible endpoint, the MCP server) adds its name to `DOORS`
and calls `admit` (through `control.start`/`control.start_new` for a debate, or directly) before
it calls a provider; `tests/security/test_admission.py` walks every door in `DOORS` at the limit
and finds the code that reaches a provider, so a door that skips this is a failing test. A refusal
is a `Refused`: `str()` is for the person, `status` the HTTP status an API answers with.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from debates.engine.distill import MAX_CHARACTERS
from debates.models import ACTIVE_STATUSES, Comparison, Debate, Distillation

# name → what it is. A door not listed here cannot be admitted (and the test fails).
DOORS: dict[str, str] = {
    "new": "the start form",
    "api.start": "POST /api/v1/debates",
    "resume": "Resume (a stopped or failed debate)",
    "api.resume": "POST /api/v1/debates/{id}/resume",
    "openai.chat": "POST /openai/v1/chat/completions (a debate as a model)",
    "retry": "Retry turn",
    "checkpoint": "Continue at the checkpoint",
    "speak": "a person's turn, written on the live page",
    "deadline": "a person's missed deadline: a model speaks for them, or the turn passes",
    "regenerate": "Regenerate a turn",
    "fork": "Fork at a turn",
    "swap": "Swap sides",
    "compare": "Compare with a single answer",
    "distill": "the start form's L3 characters: one call per person named (at most 4), inside the Start request",
    "cli.debate": "manage.py debate (--owner: counted for that user)",
    "cli.evaluate": "manage.py evaluate: its debates (--owner: counted for that user)",
    "mcp.start": "the MCP server's start_debate tool (manage.py mcp over stdio, /mcp/ over HTTP)",
}


class Refused(Exception):
    """The door stays shut. `str()` is for the person; `status` for an API's answer."""

    status = 429


class RunningLimitReached(Refused):
    """Refused: the owner already runs as many debates (and comparisons) as allowed."""

    def __init__(self, debates: int, limit: int, comparisons: int = 0, distillations: int = 0) -> None:
        super().__init__(message(debates, limit, comparisons, distillations))
        self.running, self.limit = debates + comparisons + distillations, limit


class BudgetSpent(Refused):
    """Refused: the debate's token or money budget has nothing left for this."""

    status = 409


def message(running: int, limit: int, comparisons: int = 0, distillations: int = 0) -> str:
    if distillations:
        busy = running + comparisons + distillations
        return ngettext(
            "You already have %(running)d debate, comparison or character distillation running (the limit is "
            "%(limit)d). Wait for it to finish.",
            "You already have %(running)d debates, comparisons or character distillations running (the limit is "
            "%(limit)d). Stop one or wait for it to finish.",
            busy,
        ) % {"running": busy, "limit": limit}
    if comparisons:
        return ngettext(
            "You already have %(running)d debate or comparison running (the limit is %(limit)d). "
            "Wait for it to finish.",
            "You already have %(running)d debates or comparisons running (the limit is %(limit)d). "
            "Stop one or wait for it to finish.",
            running + comparisons,
        ) % {"running": running + comparisons, "limit": limit}
    return ngettext(
        "You already have %(running)d debate running (the limit is %(limit)d). Stop it or wait for it to finish.",
        "You already have %(running)d debates running (the limit is %(limit)d). Stop one or wait for it to finish.",
        running,
    ) % {"running": running, "limit": limit}


# The most model calls one comparison makes (`debates.comparisons`): the single answer, the vote
# (3 samples and a merge), and 3 renderings. Kept here, with what counts as running, so that this
# check imports nothing that builds on it.
COMPARISON_CALLS = 1 + 4 + 3


def comparison_deadline() -> float:
    """How long a comparison may take (each call within the turn deadline); a comparison still
    "running" after that is not counted as running any more (its process died)."""
    return settings.AGORA_TURN_DEADLINE * COMPARISON_CALLS


def comparisons_in_flight():
    """Comparisons being written now: they count against their owners' running limits."""
    since = timezone.now() - timedelta(seconds=comparison_deadline())
    return Comparison.objects.filter(state=Comparison.State.RUNNING, created_at__gte=since)


def distillation_deadline() -> float:
    """How long a distillation may take: each person's call within the turn deadline
    (`debates.characters`), and as long again for the web research of them all."""
    return settings.AGORA_TURN_DEADLINE * (MAX_CHARACTERS + 1)


def distillations_in_flight():
    """Distillations of L3 characters still in their Start requests: they count against their
    owners' running limits."""
    since = timezone.now() - timedelta(seconds=distillation_deadline())
    return Distillation.objects.filter(created_at__gte=since)


def running(owner_id: int, *, besides: int | None = None) -> tuple[int, int]:
    """(debates, comparisons) running for the owner now; `besides` a debate not to count."""
    debates = Debate.objects.filter(owner_id=owner_id, status__in=ACTIVE_STATUSES)
    if besides is not None:
        debates = debates.exclude(pk=besides)
    return debates.count(), comparisons_in_flight().filter(owner_id=owner_id).count()


def admit(door: str, owner_id: int | None, *, besides: int | None = None, spending_for: Debate | None = None):
    """Let `door` spend tokens for `owner_id`, or raise `Refused`, changing nothing. Call it inside
    the transaction that then writes the rows making the spending happen. `besides`: the debate
    being started again (it does not count against itself); `spending_for`: the debate whose
    budgets pay for this outside its own run (returns `spend_for` of it)."""
    if door not in DOORS:
        raise ValueError(f"unknown door {door!r}: add it to debates.admission.DOORS")
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("admit() belongs inside the transaction that writes what it admits")
    if owner_id is not None:
        # Serialise this owner's admissions (a no-op on SQLite, see the module docstring).
        list(get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk"))
        debates, comparisons = running(owner_id, besides=besides)
        distillations = distillations_in_flight().filter(owner_id=owner_id).count()
        limit = settings.AGORA_MAX_RUNNING_PER_USER
        if debates + comparisons + distillations >= limit:
            raise RunningLimitReached(debates, limit, comparisons, distillations)
    if spending_for is not None:
        left = spend_for(spending_for)
        left.refuse_if_spent()
        return left
    return None


# -- what a debate's budgets leave ---------------------------------------------------------------


@dataclass(frozen=True)
class Left:
    """What a debate's budgets leave for spending outside its run: USD and tokens, None where the
    debate has no such budget. `spent_*` what the debate and its comparisons have spent."""

    money: float | None
    tokens: int | None
    money_budget: float | None = None
    token_budget: int | None = None
    spent_money: float = 0.0
    spent_tokens: int = 0

    MIN_TOKENS = 200  # a reply needs at least this (`baselines.MIN_TOKENS`)

    def refuse_if_spent(self) -> None:
        if self.money is not None and self.money <= 0:
            raise BudgetSpent(
                _(
                    "This debate's money budget ($%(budget)s) is spent: $%(spent)s by the debate and its "
                    "comparisons. Nothing more is spent for it."
                )
                % {"budget": f"{self.money_budget:g}", "spent": f"{self.spent_money:.4g}"}
            )
        if self.tokens is not None and self.tokens < self.MIN_TOKENS:
            raise BudgetSpent(
                _(
                    "This debate's token budget (%(budget)s) is spent: %(spent)s tokens by the debate and its "
                    "comparisons. Nothing more is spent for it."
                )
                % {"budget": self.token_budget, "spent": self.spent_tokens}
            )

    def output_tokens(self, price) -> int | None:
        """How many tokens what is left buys, counted at the output price (the dearer, so never
        more than the budget), or None without a budget."""
        limits = []
        if self.tokens is not None:
            limits.append(self.tokens)
        if self.money is not None:
            limits.append(int(self.money * 1_000_000 / price[1]) if price and price[1] > 0 else None)
        known = [n for n in limits if n is not None]
        return max(0, min(known)) if known else None


def spend_for(debate: Debate) -> Left:
    """What the debate's explicit budgets (start form: token budget, money budget) leave after
    the debate itself and every comparison made of it."""
    options = debate.options or {}
    money_budget, token_budget = options.get("money_budget"), options.get("token_budget")
    spent_money, spent_tokens = debate.cost or 0.0, debate.total_tokens
    for arms in debate.comparisons.values_list("arms", flat=True):
        for arm in (arms or {}).values():
            # An arm's own answer (the debate's is in the debate's figures) and its neutral rendering.
            for spent in (arm, arm.get("rendering") or {}):
                spent_money += spent.get("cost") or 0.0
                spent_tokens += spent.get("prompt_tokens", 0) + spent.get("completion_tokens", 0)
    return Left(
        money=None if not money_budget else round(float(money_budget) - spent_money, 8),
        tokens=None if not token_budget else int(token_budget) - spent_tokens,
        money_budget=float(money_budget) if money_budget else None,
        token_budget=int(token_budget) if token_budget else None,
        spent_money=spent_money,
        spent_tokens=spent_tokens,
    )
