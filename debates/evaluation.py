"""Batch evaluation: each question through every arm at equal cost, each pair of answers judged
twice with the order swapped, win rates with 95% intervals and the judges' agreement.

Arms (`EVALUATION_ARMS`):
  debate  the format's debate; its answer is the report's conclusion (`baselines.conclusion_of`)
  single  one strong prompt to the default model, its output allowance matched to the debate's
          cost (or tokens, where no price is known): `baselines.single_arm`
  vote    self-consistency: k samples of the same prompt and one merge, sharing that allowance:
          `baselines.vote_arm`

A judge reads the question, the gold answer where there is one, and two answers labelled A and
B, and names the better under the rubric (RUBRIC); each pair is judged in both orders, so a judge
that prefers a position shows as inconsistent rather than as a winner.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

from channels.db import database_sync_to_async
from django.db import transaction

from debates import baselines, clients, options, runner, running_limit
from debates.baselines import Answer, Question
from debates.engine.structure import Form, Part
from debates.forms import create_debate
from debates.models import Debate
from debates.providers.base import LLMClient, ProviderError

EVALUATION_ARMS = ("debate", "single", "vote")  # what `--arms` may name
RUBRIC = (
    "1. Correctness: where a gold answer is given, the answer that agrees with it wins.\n"
    "2. Reasoning: the steps hold and the claims are supported.\n"
    "3. Counter-arguments: the strongest objections are named and answered.\n"
    "4. Actionability: a reader knows what to do or believe next."
)
JUDGE_SYSTEM = (
    "You are an impartial judge. Compare two answers to the same question under this rubric, in "
    "this order of importance:\n" + RUBRIC + "\nIgnore length and style; do not favour the first answer."
)
JUDGE_FORM = Form((Part("胜者", choices=("A", "B", "平局")), Part("理由", chars=120)))


@dataclass
class Judgement:
    question: str
    judge: str
    first: str  # the arm shown as A
    second: str  # the arm shown as B
    verdict: str  # "A" | "B" | "tie" | "unreadable"
    winner: str  # an arm, "tie", or "" when unreadable
    reason: str = ""


@dataclass
class Results:
    answers: dict[str, dict[str, Answer]] = field(default_factory=dict)  # question id → arm → answer
    judgements: list[Judgement] = field(default_factory=list)


# -- the debate arm (the baselines are debates.baselines') -------------------------------------------


def _run_debate_row(question: Question, fmt: str, owner=None) -> int:
    """The debate arm's row, created and admitted through the terminal's door (under `owner`'s
    running limit where the command names one)."""
    fmt = question.format or fmt
    values = {**options.unattended_values(fmt), **question.options, "topic": question.question, "format": fmt}
    with transaction.atomic():
        debate, errors = create_debate(values, owner=owner)
        if errors:
            raise ValueError(f"{question.id}: {errors}")
        running_limit.admit(debate, "cli.evaluate")
    return debate.pk


async def debate_arm(question: Question, fmt: str, owner=None) -> tuple[Answer, Debate]:
    pk = await database_sync_to_async(_run_debate_row)(question, fmt, owner)
    await runner.execute(pk)
    debate = await Debate.objects.select_related("report").aget(pk=pk)
    text = await database_sync_to_async(baselines.conclusion_of)(debate)
    answer = Answer("debate", text, debate.prompt_tokens, debate.completion_tokens, debate.cost, pk)
    return answer, debate


# -- judging -------------------------------------------------------------------------------------

_VERDICT = re.compile(r"(?:胜者|winner)\s*[：:]\s*(A|B|平局|tie)", re.I)


def read_verdict(text: str) -> str:
    match = _VERDICT.search(text or "")
    if not match:
        return "unreadable"
    found = match.group(1)
    return "tie" if found.lower() in ("平局", "tie") else found.upper()


def judge_messages(question: Question, first: str, second: str) -> list[dict]:
    gold = f"\n\n## Gold answer\n{question.gold}" if question.gold else ""
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": f"## Question\n{question.question}{gold}\n\n## Answer A\n{first}\n\n## Answer B\n{second}\n\n"
            "Write two lines:\n胜者：A / B / 平局\n理由：one sentence",
        },
    ]


async def judge_pair(judge: LLMClient, name: str, question: Question, x: Answer, y: Answer) -> list[Judgement]:
    """The pair in both orders."""
    made = []
    for first, second in ((x, y), (y, x)):
        extra = {"grammar": JUDGE_FORM.grammar()} if judge.supports_grammar else None
        reply = await baselines.ask(
            judge, judge_messages(question, first.text, second.text), 200, f"judge:{question.id}", extra
        )
        verdict = read_verdict(reply.text)
        winner = {"A": first.arm, "B": second.arm, "tie": "tie"}.get(verdict, "")
        reason = re.sub(r"^.*?(?:理由|reason)\s*[：:]\s*", "", reply.text, flags=re.S | re.I).strip()[:300]
        made.append(Judgement(question.id, name, first.arm, second.arm, verdict, winner, reason))
    return made


# -- the run -------------------------------------------------------------------------------------


async def evaluate(
    questions, fmt: str, arms, judges: dict[str, LLMClient], model: LLMClient, on_progress=None, *, owner=None
):
    results = Results()
    for question in questions:
        answer, debate = await debate_arm(question, fmt, owner)
        answers = {"debate": answer} if "debate" in arms else {}
        if "single" in arms:
            answers["single"] = await baselines.single_arm(model, question, debate)
        if "vote" in arms:
            answers["vote"] = await baselines.vote_arm(model, question, debate)
        results.answers[question.id] = answers
        for (name, judge), (x, y) in itertools.product(judges.items(), itertools.combinations(answers.values(), 2)):
            try:
                results.judgements += await judge_pair(judge, name, question, x, y)
            except ProviderError as error:
                results.judgements.append(Judgement(question.id, name, x.arm, y.arm, "unreadable", "", str(error)))
        if on_progress:
            on_progress(question, answers)
    return results


# -- the figures ---------------------------------------------------------------------------------


def wilson(successes: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 0.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def win_table(judgements: list[Judgement]) -> list[dict]:
    """Per pair of arms: each judgement (both orders, every judge) is a game; a tie counts half."""
    games: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for j in judgements:
        if j.verdict == "unreadable":
            continue
        pair = tuple(sorted((j.first, j.second)))
        games[pair][j.winner] += 1
    rows = []
    for (x, y), counts in sorted(games.items()):
        n = sum(counts.values())
        score = counts[x] + 0.5 * counts["tie"]
        low, high = wilson(score, n)
        rows.append({"arm": x, "against": y, "wins": counts[x], "losses": counts[y], "ties": counts["tie"],
                     "games": n, "win_rate": score / n if n else 0.0, "low": low, "high": high})  # fmt: skip
    return rows


def consistency(judgements: list[Judgement]) -> float | None:
    """How often a judge named the same winner in both orders of a pair."""
    both = defaultdict(list)
    for j in judgements:
        if j.verdict != "unreadable":
            both[(j.question, j.judge, tuple(sorted((j.first, j.second))))].append(j.winner)
    pairs = [w for w in both.values() if len(w) == 2]
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else None


def agreement(judgements: list[Judgement]) -> float | None:
    """How often two judges named the same winner for the same pair shown in the same order."""
    seen = defaultdict(dict)
    for j in judgements:
        if j.verdict != "unreadable":
            seen[(j.question, j.first, j.second)][j.judge] = j.winner
    pairs = [a == b for verdicts in seen.values() for a, b in itertools.combinations(verdicts.values(), 2)]
    return sum(pairs) / len(pairs) if pairs else None


def accuracy(results: Results, questions) -> dict[str, float]:
    """Where a gold answer is given: the share of each arm's answers that contain it."""
    golden = [q for q in questions if q.gold]
    if not golden:
        return {}
    scores = defaultdict(int)
    for q in golden:
        for arm, answer in results.answers.get(q.id, {}).items():
            scores[arm] += _normal(q.gold) in _normal(answer.text)
    return {arm: scores[arm] / len(golden) for arm in sorted(scores)}


def _normal(text: str) -> str:
    return re.sub(r"[\s,，。.]", "", text).lower()


def judgement_lines(results: Results) -> list[str]:
    return [json.dumps(asdict(j), ensure_ascii=False) for j in results.judgements]


def judge_clients(spec: str) -> dict[str, LLMClient]:
    """`p/m,p/m` (a Provider row's name and a model; `default/m` the environment's), or "" for the
    default model alone."""
    from debates.models import Provider

    if not spec.strip():
        return {"default": clients.default_client()}
    made = {}
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        provider_name, _slash, model = item.partition("/")
        if provider_name == "default":
            made[item] = clients.default_client(model)
            continue
        provider = Provider.objects.filter(name=provider_name).first()
        if provider is None:
            raise ValueError(
                f"--judges: no provider named {provider_name!r} (add it in the admin, or use default/MODEL)"
            )
        made[item] = clients.provider_client(provider, model)
    return made


async def close_all(made) -> None:
    """Close the judges' and the model's connections (the process's local model stays up)."""
    for client in set(made):
        if not clients.is_local(client) and hasattr(client, "aclose"):
            await client.aclose()
