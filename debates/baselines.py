"""What the blind comparison (`debates.comparisons`) and the batch evaluation (`debates.evaluation`)
share: a question, an answer and how one is asked for, the debate's own answer (its conclusion),
and the two baselines a debate is measured against at about its cost.

  single  one strong prompt (`SINGLE_SYSTEM`), its output allowance matched to the debate's cost
          (or tokens, where no price is known): `allowance`
  vote    self-consistency: `SAMPLES` samples of the same prompt and one merge, sharing that allowance

Both modules build on this one and neither imports the other. Every call here spends tokens, so
its callers are admitted doors (`debates.admission`): a comparison ("compare") or the evaluation's
command ("cli.evaluate").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from debates.engine.budget import money
from debates.providers.base import LLMClient, estimate_messages_tokens

MIN_TOKENS, MAX_TOKENS = 200, 4000  # what one reply of a baseline may hold
SAMPLES = 3  # the vote's samples (then one merge)
SINGLE_SYSTEM = (
    "你是一位资深顾问，独自回答用户的问题：先给结论，再给理由，列出最强的反对意见并回应，最后给出可执行的建议。"
    "用提问所用的语言作答。Answer in the language of the question."
)
MERGE_SYSTEM = (
    "You are given several answers to one question. Write the single best answer: keep what most of "
    "them agree on, settle their disagreements with reasons. Answer in the language of the question."
)


@dataclass
class Question:
    id: str
    question: str
    gold: str = ""
    format: str = ""  # the debate's format for this question ("" = the command's)
    options: dict = field(default_factory=dict)  # as the start form takes them: personas, rounds, force…

    @classmethod
    def parse(cls, line: str) -> Question:
        data = json.loads(line)
        return cls(
            str(data["id"]),
            data["question"],
            str(data.get("gold", "") or ""),
            data.get("format", ""),
            dict(data.get("options") or {}),
        )


@dataclass
class Answer:
    arm: str
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    debate_id: int | None = None
    max_tokens: int = 0  # the allowance it was given, and by which rule (`allowance`)
    rule: str = ""


def conclusion_of(debate) -> str:
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


async def ask(client: LLMClient, messages, max_tokens: int, key: str, extra=None) -> Answer:
    """One call to the model, streamed to its end. Callers are admitted doors (`debates.admission`):
    a comparison ("compare") or the evaluation's command ("cli.evaluate")."""
    stream = client.stream(messages, max_tokens=max_tokens, key=key, extra=extra)
    parts = [delta async for delta in stream]
    done = stream.completion
    cost = money(client.price, done.prompt_tokens, done.completion_tokens)
    return Answer("", done.text or "".join(parts), done.prompt_tokens, done.completion_tokens, cost)


def allowance(
    debate, price, prompt_tokens: int, window: int | None = None, budget: int | None = None
) -> tuple[int, str]:
    """(max_tokens, the rule used): equal cost where prices are known, equal tokens otherwise;
    never more than the model's context window leaves after the prompt, nor than `budget` (what
    the debate's budgets leave for it, `comparisons.budget_ceiling`)."""
    if price is not None and price[1] > 0 and debate.cost > 0:
        left = debate.cost - prompt_tokens * price[0] / 1_000_000
        tokens, rule = int(left * 1_000_000 / price[1]), "equal cost"
    else:
        tokens, rule = debate.total_tokens - prompt_tokens, "equal tokens"
    ceiling = MAX_TOKENS if not window else max(MIN_TOKENS, min(MAX_TOKENS, window - prompt_tokens - 64))
    tokens = max(MIN_TOKENS, min(ceiling, tokens))
    if budget is not None and budget < tokens:
        tokens, rule = max(MIN_TOKENS, budget), "the budget left"
    return tokens, rule


def single_messages(question: str) -> list[dict]:
    return [{"role": "system", "content": SINGLE_SYSTEM}, {"role": "user", "content": question}]


async def single_arm(client: LLMClient, question: Question, debate, budget: int | None = None) -> Answer:
    """`budget`: the most output tokens the debate's budgets leave (`comparisons.budget_ceiling`)."""
    messages = single_messages(question.question)
    tokens, rule = allowance(debate, client.price, estimate_messages_tokens(messages), client.context_window, budget)
    answer = await ask(client, messages, tokens, f"eval:{question.id}:single")
    answer.arm, answer.max_tokens, answer.rule = "single", tokens, rule
    return answer


async def vote_arm(client: LLMClient, question: Question, debate, budget: int | None = None) -> Answer:
    """k samples and a merge, each with a (k+1)th of the allowance."""
    messages = single_messages(question.question)
    tokens, rule = allowance(debate, client.price, estimate_messages_tokens(messages), client.context_window, budget)
    share = max(MIN_TOKENS // 2, tokens // (SAMPLES + 1))
    samples = [await ask(client, messages, share, f"eval:{question.id}:vote:{n}") for n in range(SAMPLES)]
    listed = "\n\n".join(f"### Answer {n + 1}\n{s.text}" for n, s in enumerate(samples))
    merge = [
        {"role": "system", "content": MERGE_SYSTEM},
        {"role": "user", "content": f"## Question\n{question.question}\n\n{listed}"},
    ]
    merged = await ask(client, merge, share, f"eval:{question.id}:vote:merge")
    every = [*samples, merged]
    costs = [a.cost for a in every]
    return Answer(
        "vote",
        merged.text,
        sum(a.prompt_tokens for a in every),
        sum(a.completion_tokens for a in every),
        None if None in costs else sum(costs),
        max_tokens=tokens,
        rule=rule,
    )
