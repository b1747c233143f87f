"""`manage.py evaluate QUESTIONS.jsonl`: is the debate worth it on your questions and models?"""

from __future__ import annotations

import asyncio
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from debates import admission, baselines, clients, evaluation
from debates.engine import registry


class Command(BaseCommand):
    help = (
        "Run each question (a JSONL line: id, question, optional gold and format) through every arm at "
        "equal cost: the debate, a single strong prompt, and self-consistency (vote: 3 samples and a merge). "
        "Every judge compares every pair of answers twice, in both orders. Rubric, in order: "
        + evaluation.RUBRIC.replace("\n", " ")
        + " Prints win rates with 95% intervals (a tie counts half), how often each judge named the same "
        "winner in both orders, the judges' agreement, and, where gold answers are given, each arm's accuracy."
    )

    def add_arguments(self, parser):
        parser.add_argument("questions", help="a JSONL file, e.g. bench/questions/decisions.jsonl")
        parser.add_argument(
            "--format",
            default=registry.names()[0],
            choices=registry.names(),
            help="the debates' format, where a question names none",
        )
        parser.add_argument(
            "--judges", default="", help="provider/model,provider/model (default/MODEL: the environment's)"
        )
        parser.add_argument("--arms", default="debate,single,vote", help="which arms: debate,single,vote")
        parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
        parser.add_argument("--out", default="judgements.jsonl", help="where every judgement is written")
        parser.add_argument(
            "--owner",
            default="",
            help="the user whose debates these are: each is admitted under that user's running limit",
        )

    def handle(self, *args, **opts):
        path = Path(opts["questions"])
        if not path.exists():
            raise CommandError(f"{path}: no such file")
        questions = [
            baselines.Question.parse(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        if opts["limit"]:
            questions = questions[: opts["limit"]]
        arms = [a.strip() for a in opts["arms"].split(",") if a.strip()]
        unknown = sorted(set(arms) - set(evaluation.EVALUATION_ARMS))
        if unknown or "debate" not in arms or len(arms) < 2:
            raise CommandError("--arms: the debate and at least one of single, vote")
        try:
            judges = evaluation.judge_clients(opts["judges"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        owner = None
        if opts["owner"]:
            owner = get_user_model().objects.filter(username=opts["owner"]).first()
            if owner is None:
                raise CommandError(f"no user named {opts['owner']!r}")
        model = clients.default_client()

        def progress(question, answers):
            self.stdout.write(f"  {question.id}: " + ", ".join(f"{a} {len(x.text)} chars" for a, x in answers.items()))

        self.stdout.write(f"{len(questions)} questions, arms {', '.join(arms)}, judges {', '.join(judges)}")
        try:
            results = asyncio.run(self._run(questions, opts["format"], arms, judges, model, progress, owner))
        except admission.Refused as refusal:
            raise CommandError(str(refusal)) from None
        Path(opts["out"]).write_text("\n".join(evaluation.judgement_lines(results)) + "\n", encoding="utf-8")
        self.print_tables(results, questions, opts["out"])

    async def _run(self, questions, fmt, arms, judges, model, progress, owner=None):
        try:
            for client in {model, *judges.values()}:
                await client.ensure_ready()
            return await evaluation.evaluate(questions, fmt, arms, judges, model, progress, owner=owner)
        finally:
            await evaluation.close_all([model, *judges.values()])

    def print_tables(self, results, questions, out) -> None:
        w = self.stdout.write
        w("\narm      vs       wins losses ties games  win rate  95% interval")
        for row in evaluation.win_table(results.judgements):
            w(
                f"{row['arm']:<8} {row['against']:<8} {row['wins']:>4} {row['losses']:>6} {row['ties']:>4} "
                f"{row['games']:>5}  {row['win_rate']:>7.0%}  {row['low']:.0%}–{row['high']:.0%}"
            )
        unreadable = sum(j.verdict == "unreadable" for j in results.judgements)
        consistent, agreed = evaluation.consistency(results.judgements), evaluation.agreement(results.judgements)
        w(f"\njudgements: {len(results.judgements)} ({unreadable} unreadable, left out)")
        w("same winner in both orders: " + (f"{consistent:.0%}" if consistent is not None else "—"))
        w("judges agree: " + (f"{agreed:.0%}" if agreed is not None else "— (one judge)"))
        for arm, share in evaluation.accuracy(results, questions).items():
            w(f"accuracy against the gold answers, {arm}: {share:.0%}")
        w(f"every judgement: {out}")
