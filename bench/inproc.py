"""Sections 1, 3 and 4 of the benchmark, run in one process with Django and the real sink.

    python -m bench.inproc --db PATH --workdir DIR --out RESULT.json

Each debate is created as the start form creates it (`forms.create_debate`) and run to its end by
`runner.execute` — the real DjangoSink writing the real SQLite database — against the fake OpenAI
server in a process of its own (bench/fakeproc.py). Debates run one after another, alone.

1. Critical path: each format at a fixed token delay. Wall = `execute()` from call to return.
   Lower bound = the model's own time: the requests' server-side intervals (request read → last
   byte written) grouped into steps — requests whose intervals overlap form one parallel round,
   which costs its longest request; a request alone is a sequential turn and costs its own length.
3. Token growth: duels of 2, 4 and 8 rounds with replies of duel length (~300 tokens), and one
   panel with its cap. Agora's prompt per turn is what the server counted (the usage it reported);
   the full-history equivalent of turn i is the same prompt plus every earlier turn's text.
4. Database writes: every INSERT/UPDATE/DELETE statement any connection executes while the
   debates of section 1 run, per streamed token and per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fakeproc import FakeProcess  # noqa: E402

# Each format as a user would start it (the form's fields); the engine picks the personas where
# the form allows it. Enough turns to show per-turn costs, few enough to run in about a minute.
FORMATS = {
    "duel": {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": 4},
    "panel": {"topic": "我们团队是否应该在明年全面转向远程办公？", "format": "panel"},
    "roundtable": {
        "topic": "我们的客服产品要不要引入 RAG 知识库？",
        "format": "roundtable",
        "mode": "standard",
        "no_interrupt": True,
    },
    "moderated": {
        "topic": "小公司应该先做产品还是先做销售？",
        "format": "moderated",
        "personas": ["steve-jobs", "charlie-munger", "confucius"],
        "rounds": 2,
    },
}
GROWTH_ROUNDS = (2, 4, 8)

# Write statements by kind, and write transactions ("commits"): an atomic block that wrote
# counts once when it commits; a write outside any block is its own (autocommit) transaction.
WRITES: Counter = Counter()


def _count_writes(execute, sql, params, many, context):
    verb = sql.lstrip()[:7].upper()
    for kind in ("INSERT", "UPDATE", "DELETE"):
        if verb.startswith(kind):
            WRITES[kind] += 1
            connection = context["connection"]
            if connection.in_atomic_block:
                connection.bench_dirty = True
            else:
                WRITES["commits"] += 1
            break
    return execute(sql, params, many, context)


def _count_commits() -> None:
    from django.db.backends.base.base import BaseDatabaseWrapper

    commit = BaseDatabaseWrapper.commit

    def counted(self):
        if getattr(self, "bench_dirty", False):
            WRITES["commits"] += 1
            self.bench_dirty = False
        return commit(self)

    rollback = BaseDatabaseWrapper.rollback

    def rolled_back(self):
        self.bench_dirty = False
        return rollback(self)

    BaseDatabaseWrapper.commit = counted
    BaseDatabaseWrapper.rollback = rolled_back


def setup_django(base_url: str, db: Path) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "agora.settings",
            "DATABASE_URL": f"sqlite:///{db}",
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "sk-bench-fake",
            # Parallel rounds must not queue behind the provider limit: the bound assumes they can
            # all run at once (the panel's rounds have five turns, the roundtable's up to five).
            "AGORA_PROVIDER_CONCURRENCY": "8",
            "AGORA_MAX_RUNNING_PER_USER": "1000",
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.db.backends.signals import connection_created

    def hook(sender, connection, **kwargs):
        if _count_writes not in connection.execute_wrappers:
            connection.execute_wrappers.append(_count_writes)

    connection_created.connect(hook, weak=False)
    _count_commits()
    # As the web process and each worker do before they serve (agora/asgi.py, agora_worker): cold,
    # the first format measured carried the process's one-time imports (the price table, Markdown,
    # the view modules: 0.2 s before the duel's first request, 0.35 s after its last) as overhead.
    from debates.warm import warm_up

    warm_up()


def create(values: dict, suffix: str = "") -> int:
    from django.contrib.auth.models import User

    from debates.forms import create_debate

    values = {**values, "topic": values["topic"] + suffix}
    debate, errors = create_debate(values, owner=User.objects.get(username="alice"))
    if debate is None:
        raise RuntimeError(f"the form refused {values}: {errors}")
    return debate.pk


# One loop for every debate: the SDK's connection pools close with the loop that made them.
LOOP = asyncio.new_event_loop()


def run_one(pk: int) -> tuple[str, float, float]:
    from debates.runner import execute

    async def timed():
        started = time.monotonic()
        outcome = await execute(pk)
        return outcome, started, time.monotonic()

    return LOOP.run_until_complete(timed())


def steps(requests: list[dict]) -> list[list[dict]]:
    """Requests grouped into the debate's steps: overlapping intervals = one parallel round."""
    groups: list[list[dict]] = []
    end = None
    for r in sorted(requests, key=lambda r: r["started"]):
        if groups and r["started"] < end:
            groups[-1].append(r)
            end = max(end, r["finished"])
        else:
            groups.append([r])
            end = r["finished"]
    return groups


def turn_rows(pk: int) -> list[dict]:
    from debates.models import Turn

    return list(
        Turn.objects.filter(debate_id=pk)
        .order_by("position")
        .values("key", "round", "phase", "text", "messages", "prompt_tokens", "completion_tokens", "state")
    )


def critical_path(fake: FakeProcess, token_delay: float, reply_tokens: int) -> dict:
    fake.configure(token_delay, reply_tokens)
    results = {}
    for name, values in FORMATS.items():
        pk = create(values, f"（基准 {name}）")
        fake.reset()
        before = WRITES.copy()
        outcome, started, finished = run_one(pk)
        writes = WRITES - before
        commits = writes.pop("commits", 0)
        requests = [r for r in fake.dump() if r["finished"] is not None]
        groups = steps(requests)
        bound = sum(max(r["finished"] - r["started"] for r in g) for g in groups)
        wall = finished - started
        turns = turn_rows(pk)
        tokens = sum(len(r["tokens"]) for r in requests)
        results[name] = {
            "outcome": outcome,
            "wall_s": wall,
            "lower_bound_s": bound,
            "ratio": wall / bound if bound else None,
            "overhead_s": wall - bound,
            "requests": len(requests),
            "steps": len(groups),
            "parallel_rounds": sum(1 for g in groups if len(g) > 1),
            "overhead_per_step_ms": 1000 * (wall - bound) / max(1, len(groups)),
            "first_request_after_s": min(r["started"] for r in requests) - started if requests else None,
            "after_last_request_s": finished - max(r["finished"] for r in requests) if requests else None,
            "turns": len(turns),
            "streamed_tokens": tokens,
            "db_writes": dict(writes),
            "db_writes_total": sum(writes.values()),
            "db_writes_per_token": sum(writes.values()) / tokens if tokens else None,
            "db_writes_per_turn": sum(writes.values()) / len(turns) if turns else None,
            "db_commits": commits,
            "db_commits_per_token": commits / tokens if tokens else None,
            "db_commits_per_turn": commits / len(turns) if turns else None,
        }
        print(f"  critical path {name}: {outcome} in {wall:.2f}s (bound {bound:.2f}s)", file=sys.stderr, flush=True)
    return results


def token_growth(fake: FakeProcess, reply_tokens: int) -> dict:
    from debates.models import Debate
    from debates.providers.base import estimate_tokens

    fake.configure(0.0, reply_tokens)
    duels = {}
    for rounds in GROWTH_ROUNDS:
        pk = create({**FORMATS["duel"], "rounds": rounds}, f"（增长 {rounds}）")
        outcome, _, _ = run_one(pk)
        turns = [t for t in turn_rows(pk) if t["state"] == "done"]
        agora = [t["prompt_tokens"] for t in turns]
        full, earlier = [], 0
        for t in turns:
            full.append(t["prompt_tokens"] + earlier)
            earlier += estimate_tokens(t["text"]) + 4  # one more message in the chat
        speeches = [t for t in turns if t["phase"] == "duel"]
        duels[rounds] = {
            "outcome": outcome,
            "turns": len(turns),
            "speech_turns": len(speeches),
            "agora_prompt_per_turn": agora,
            "full_prompt_per_turn": full,
            "agora_total": sum(agora),
            "full_total": sum(full),
            "ratio": sum(agora) / sum(full) if full else None,
            "completion_per_turn_mean": sum(t["completion_tokens"] for t in turns) / max(1, len(turns)),
        }
        print(f"  token growth duel x{rounds}: ratio {duels[rounds]['ratio']:.3f}", file=sys.stderr, flush=True)

    pk = create(FORMATS["panel"], "（增长 panel）")
    outcome, _, _ = run_one(pk)
    debate = Debate.objects.select_related("report").get(pk=pk)
    data = debate.report.data if hasattr(debate, "report") else {}
    ledger = data.get("ledger", {})
    panel = {
        "outcome": outcome,
        "turns": len(turn_rows(pk)),
        "cap": ledger.get("cap"),
        "counted_against_cap": ledger.get("counted_against_cap"),
        "total": ledger.get("total"),
        "token_cap": data.get("token_cap"),
        "stopped_by_cap_in_round": data.get("stopped_by_cap_in_round"),
    }
    return {"reply_tokens": reply_tokens, "duel": duels, "panel": panel}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--token-delay", type=float, default=0.01)
    parser.add_argument("--reply-tokens", type=int, default=150)
    parser.add_argument("--growth-reply-tokens", type=int, default=300)
    parser.add_argument("--only", choices=["critical", "growth"], default=None)
    args = parser.parse_args(argv)

    fake = FakeProcess(args.token_delay, args.reply_tokens, args.workdir).start()
    try:
        setup_django(fake.base_url, args.db)
        out: dict = {"token_delay": args.token_delay, "reply_tokens": args.reply_tokens}
        if args.only in (None, "critical"):
            out["critical_path"] = critical_path(fake, args.token_delay, args.reply_tokens)
        if args.only in (None, "growth"):
            out["token_growth"] = token_growth(fake, args.growth_reply_tokens)
        args.out.write_text(json.dumps(out, ensure_ascii=False, indent=1))
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
