"""Agora's benchmark: does the app add anything visible on top of the model?

    .venv/bin/python bench/run.py            # everything, about 2.5 minutes on 2 cores (`make bench`)
    .venv/bin/python bench/run.py --levels 1,10 --skip-inproc     # only some of it
    .venv/bin/python bench/run.py --update-readme                 # also rewrite bench/README.md's figures
    .venv/bin/python bench/run.py --workers --skip-inproc --skip-latency   # section 5 alone (~7 min)

Prints one table per section, each figure beside its goal, and writes every figure to
bench/out/latest.json. Everything runs against the fake OpenAI server (bench/fakeproc.py: the
project's loopback server in a process of its own) at a fixed token delay:

  1. Critical path    each format alone, in-process with the real sink and SQLite (bench/inproc.py)
  2. Latency          token written by the model → frame received by a viewer, on the real server
                      (daphne, one process, in-memory channel layer) at 1, 10, 100 debates × 3
                      viewers; CPU per 1,000 tokens and peak memory (bench/latency.py)
  3. Token growth     duel prompts at 2, 4, 8 rounds against a full-history chat; the panel's cap
  4. Database writes  per streamed token and per turn, during section 1's debates
  2c. Per core       (--per-core; PostgreSQL and Redis) `manage.py serve --processes P`, P = 1 and the
                      cores: the most debates × 3 viewers within p99 ≤ 100 ms, and 100 (bench/per_core.py)
  5. Scale-out        (--workers; needs PostgreSQL and Redis, bin/start-services) one daphne + 1 or 2
                      `agora_worker`s: the most concurrent debates within p99 ≤ 100 ms (bench/workers.py)
  6. Local quality    (--local-quality; the bundled model, about 35 min on 2 cores) what it writes
                      in each format: parts complete, echoes, summaries, side flips (bench/local_quality.py)
  7. Browser          (--browser; Debian's Chromium) the renderer's CPU per streamed token for one live
                      page (duel, a panel's parallel round), and 10 live pages' token → DOM latency
                      with daphne's CPU and the machine's load (bench/browser.py)

bench/README.md explains each measurement and keeps the latest figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fakeproc import FakeProcess  # noqa: E402

OUT = ROOT / "bench" / "out"
README = ROOT / "bench" / "README.md"

GOALS = {
    "critical_ratio": 1.05,
    "p50_ms": 30.0,
    "p99_ms": 100.0,
    "growth_ratio_at_8": 0.3,
    "commits_per_token": 0.3,
    "scale_debates": 100,  # one daphne must hold this many debates within p50/p99
    "popular_p99_ms": 250.0,
    "workers_per_worker": 20,
    "workers_scaling": 0.10,  # two workers hold twice one worker's count, ± this share
}
WORKERS_README_MARK = "bench:workers"
PER_CORE_README_MARK = "bench:per-core"


def machine() -> dict:
    cpu = ""
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = ""
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "memory": memory,
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "loop": event_loop_name(),
    }


def event_loop_name() -> str:
    """The event loop the servers measured here run on (agora/event_loop.py)."""
    from agora.event_loop import uvloop_module

    uvloop = uvloop_module()
    return f"uvloop {uvloop.__version__}" if uvloop else "asyncio"


def prepare(work: Path) -> Path:
    from testkit.servers import prepare_database

    template = work / "template.sqlite3"
    prepare_database(template, {k: v for k, v in os.environ.items() if k != "DATABASE_URL"})
    return template


def run_inproc(work: Path, template: Path, args) -> dict:
    db = work / "inproc.sqlite3"
    shutil.copy(template, db)
    out = work / "inproc.json"
    command = [
        sys.executable,
        "-m",
        "bench.inproc",
        "--db",
        str(db),
        "--workdir",
        str(work),
        "--out",
        str(out),
        "--token-delay",
        str(args.critical_token_delay),
        "--reply-tokens",
        str(args.critical_reply_tokens),
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "OPENAI_BASE_URL")}
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=600)
    return json.loads(out.read_text())


def level_passes(r: dict) -> bool:
    return (
        r["p50_ms"] is not None
        and r["p50_ms"] <= GOALS["p50_ms"]
        and r["p99_ms"] <= GOALS["p99_ms"]
        and not r["viewer_error_count"]
        and not r["missing"]
    )


def run_latency(work: Path, template: Path, args) -> dict:
    """The fixed levels, then the search for the largest count within the goal: upward from the
    goal's count in steps of 50 while it passes; below it, bisected between the largest count that
    passed and the smallest that missed (within `--search-steps` more levels)."""
    from bench.latency import run_level

    fake = FakeProcess(args.token_delay, args.reply_tokens, work).start()
    levels = {}

    def level(n: int) -> bool:
        print(f"  latency: {n} debate(s) × {args.viewers} viewers …", file=sys.stderr, flush=True)
        levels[str(n)] = lv = run_level(
            fake, template, work / f"latency-{n}", n, viewers_per=args.viewers, rounds=args.rounds
        )
        print(
            f"  latency: {n}: p50 {_ms(lv['p50_ms'])} p99 {_ms(lv['p99_ms'])} in {lv['elapsed_s']:.1f}s",
            file=sys.stderr,
            flush=True,
        )
        return level_passes(lv)

    popular = {}
    try:
        passed = {n: level(n) for n in args.levels}
        steps = args.search_steps
        if steps:
            n = GOALS["scale_debates"]
            if n not in passed:
                passed[n] = level(n)
            while passed[n] and steps:
                n += 50
                passed[n] = level(n)
                steps -= 1
            while steps:
                good = max((k for k, ok in passed.items() if ok), default=0)
                bad = min((k for k, ok in passed.items() if not ok and k > good), default=None)
                if bad is None or bad - good <= max(2, good // 10):
                    break
                middle = (good + bad) // 2 if good else max(1, bad // 2)
                passed[middle] = level(middle)
                steps -= 1
        for viewers in args.popular:
            print(f"  popular page: 1 debate × {viewers} viewers …", file=sys.stderr, flush=True)
            popular[str(viewers)] = lv = run_level(
                fake,
                template,
                work / f"popular-{viewers}",
                1,
                viewers_per=viewers,
                rounds=args.popular_rounds,
                timeout=600,
            )
            print(f"  popular page: {viewers}: p99 {_ms(lv['p99_ms'])}", file=sys.stderr, flush=True)
    finally:
        fake.stop()
    best = max((n for n, r in levels.items() if level_passes(r)), key=int, default=None)
    return {
        "token_delay": args.token_delay,
        "reply_tokens": args.reply_tokens,
        "rounds": args.rounds,
        "viewers_per_debate": args.viewers,
        "levels": dict(sorted(levels.items(), key=lambda item: int(item[0]))),
        "max_debates_within_goal": int(best) if best is not None else None,
        "popular_rounds": args.popular_rounds,
        "popular": popular,
    }


def run_workers(work: Path, args, *, pin: bool = False) -> dict:
    from bench.workers import run_workers as run

    return run(
        work,
        pin=pin,
        counts=args.workers_counts,
        token_delay=args.token_delay,
        reply_tokens=args.reply_tokens,
        viewers_per=args.viewers,
        rounds=args.rounds,
        budget_s=args.workers_budget,
        levels=args.workers_levels or None,
        threads=args.workers_threads,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )


def run_per_core(work: Path, args) -> dict:
    from bench.per_core import run_per_core as run

    return run(
        work,
        processes=args.per_core_processes,
        token_delay=args.token_delay,
        reply_tokens=args.reply_tokens,
        viewers_per=args.viewers,
        rounds=args.rounds,
        budget_s=args.per_core_budget,
        levels=args.per_core_levels or None,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )


# -- printing --------------------------------------------------------------------------------------


def _ms(value) -> str:
    return "—" if value is None else f"{value:.0f} ms"


def _verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("PASS" if ok else "MISS")


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join([line, rule, *body])


def popular_passes(r: dict) -> bool:
    p99 = r.get("settled_p99_ms")
    return (
        p99 is not None
        and p99 <= GOALS["popular_p99_ms"]
        and not r["viewer_error_count"]
        and not r["missing"]
        and not r.get("viewers_late")  # every viewer watched it live
    )


def scale_goals(results: dict) -> list[list]:
    """The scale goals, one line each: what was measured and whether it meets the goal."""
    rows = []
    lat = results.get("latency") or {}
    levels = lat.get("levels", {})
    n = GOALS["scale_debates"]
    if str(n) in levels:
        r = levels[str(n)]
        best = lat.get("max_debates_within_goal")
        rows.append(
            [
                f"{n} debates on one daphne: p50 ≤ {GOALS['p50_ms']:.0f} ms, p99 ≤ {GOALS['p99_ms']:.0f} ms, "
                "no failed viewer",
                f"p50 {_ms(r['p50_ms'])}, p99 {_ms(r['p99_ms'])}, {r['viewer_error_count']} failed; "
                f"largest count within: {best if best is not None else 'none'}",
                _verdict(level_passes(r)),
            ]
        )
    low = levels.get("10")
    high = levels.get(str(n))
    if low and high and low.get("cpu_s_per_1000_tokens") and high.get("cpu_s_per_1000_tokens"):
        a, b = low["cpu_s_per_1000_tokens"], high["cpu_s_per_1000_tokens"]
        rows.append(
            [f"CPU per 1,000 tokens at {n} debates ≤ at 10", f"{b:.2f} s at {n}, {a:.2f} s at 10", _verdict(b <= a)]
        )
    popular = lat.get("popular") or {}
    if popular:
        within = [int(v) for v, r in popular.items() if popular_passes(r)]
        tried = max(int(v) for v in popular)
        rows.append(
            [
                f"a popular page: viewers of one debate within settled p99 ≤ {GOALS['popular_p99_ms']:.0f} ms "
                f"(tried up to {tried})",
                f"{max(within) if within else 'none'}",
                _verdict(bool(within) and max(within) == tried),
            ]
        )
    pc = results.get("per_core")
    if pc and "processes" in pc:
        goal = pc["goal_debates"]
        for p, found in pc["processes"].items():
            r = found["levels"].get(str(goal))
            best = found["max_debates_within_goal"]
            measured = f"largest count within: {best if best is not None else 'none'}"
            if r:
                measured = (
                    f"p50 {_ms(r['p50_ms'])}, p99 {_ms(r['p99_ms'])}, {r['viewer_error_count']} failed; " + measured
                )
            rows.append(
                [
                    f"{goal} debates × 3 on `serve --processes {p}` (PostgreSQL + Redis): p99 ≤ "
                    f"{pc['goal_p99_ms']:.0f} ms, no failed viewer",
                    measured,
                    _verdict(bool(r and r["passed"])),
                ]
            )
    elif pc and "skipped" in pc:
        rows.append(["one process per core (PostgreSQL + Redis)", f"skipped: {pc['skipped']}", "—"])
    for key in ("workers", "workers_pinned"):
        w = results.get(key)
        pinned = " (each worker on a core of its own)" if key == "workers_pinned" else " (all on shared cores)"
        if w and "counts" in w:
            found = {int(k): v.get("max_debates_within_goal") for k, v in w["counts"].items()}
            skipped = {int(k): v["skipped"] for k, v in w["counts"].items() if "skipped" in v}
            one, two = found.get(1), found.get(2)
            per = GOALS["workers_per_worker"]
            if 1 in found and 1 not in skipped:
                rows.append(
                    [
                        f"worker mode: ≥ {per} debates per worker{pinned}",
                        f"{one if one is not None else 'none'} with 1 worker",
                        _verdict(one is not None and one >= per),
                    ]
                )
            if 2 in skipped:
                rows.append([f"two workers hold 2× one worker's count{pinned}", f"not measured: {skipped[2]}", "—"])
            elif one and two is not None:
                ratio = two / one
                rows.append(
                    [
                        f"two workers hold 2× one worker's count (± {GOALS['workers_scaling']:.0%}){pinned}",
                        f"{two} with 2 workers ({ratio:.2f}×)",
                        _verdict(abs(ratio - 2) <= 2 * GOALS["workers_scaling"]),
                    ]
                )
        elif w and "skipped" in w:
            rows.append(["worker mode (PostgreSQL + Redis)", f"skipped: {w['skipped']}", "—"])
    return rows


def report(results: dict) -> str:
    parts = []
    m = results["machine"]
    parts.append(
        f"Agora benchmark · {results['when']} · {m['cpu']}, {m['cores']} cores, {m['memory']} · "
        f"Python {m['python']} ({m.get('loop', 'asyncio')}) · {m['system']} · took {results['took_s']:.0f} s"
    )
    inproc = results.get("inproc")
    if inproc:
        cp = inproc["critical_path"]
        rows = []
        for name, r in cp.items():
            ok = r["outcome"] == "done" and r["ratio"] is not None and r["ratio"] <= GOALS["critical_ratio"]
            rows.append(
                [
                    name,
                    r["outcome"],
                    r["turns"],
                    f"{r['steps']} ({r['parallel_rounds']} parallel)",
                    f"{r['wall_s']:.2f} s",
                    f"{r['lower_bound_s']:.2f} s",
                    f"{r['overhead_per_step_ms']:.0f} ms",
                    f"{r['ratio']:.3f}",
                    f"≤ {GOALS['critical_ratio']}",
                    _verdict(ok),
                ]
            )
        parts.append(
            f"\n1. Critical path — each format alone, fake model at {inproc['token_delay'] * 1000:.0f} ms/token, "
            f"~{inproc['reply_tokens']}-token replies (+ field lines)\n"
            + table(
                ["format", "outcome", "turns", "steps", "wall", "lower bound", "overhead/step", "ratio", "goal", ""],
                rows,
            )
        )
    lat = results.get("latency")
    if lat:
        rows = []
        for n, r in lat["levels"].items():
            ok = level_passes(r) if r["p50_ms"] is not None else None
            rows.append(
                [
                    n,
                    f"{r['viewers']} ({r['viewer_error_count']} failed)",
                    r["peak_concurrent_streams"],
                    r["streamed_tokens"],
                    r["samples"],
                    _ms(r["p50_ms"]),
                    _ms(r["p99_ms"]),
                    _ms(r["max_ms"]),
                    f"{_ms(r['steady_p50_ms'])} / {_ms(r['steady_p99_ms'])}",
                    r["missing"],
                    f"≤ {GOALS['p50_ms']:.0f} / ≤ {GOALS['p99_ms']:.0f} ms",
                    _verdict(ok),
                    f"{r['cpu_s_per_1000_tokens']:.2f} s",
                    f"{100 * r['server_cpu_utilisation']:.0f}%",
                    f"{r['peak_rss_mb']:.0f} MB",
                ]
            )
        parts.append(
            f"\n2. Streaming latency — token written → viewer has it; duels of {lat['rounds']} round(s), "
            f"{lat['viewers_per_debate']} viewers each, fake model at {lat['token_delay'] * 1000:.0f} ms/token, "
            "one daphne process\n"
            + table(
                [
                    "debates",
                    "viewers",
                    "peak streams",
                    "tokens",
                    "samples",
                    "p50",
                    "p99",
                    "max",
                    "steady p50/p99",
                    "missed",
                    "goal p50/p99",
                    "",
                    "CPU/1k tokens",
                    "server CPU",
                    "peak RSS",
                ],
                rows,
            )
        )
    if lat and lat.get("popular"):
        rows = []
        for n, r in lat["popular"].items():
            ok = popular_passes(r)
            rows.append(
                [
                    n,
                    f"{r['viewer_error_count']} / {r.get('viewers_late', 0)}",
                    r["streamed_tokens"],
                    r["samples"],
                    f"{_ms(r['p50_ms'])} / {_ms(r['p99_ms'])}",
                    f"{_ms(r['settled_p50_ms'])} / {_ms(r['settled_p99_ms'])}",
                    _ms(r["max_ms"]),
                    r["missing"],
                    r["frames_received"],
                    f"≤ {GOALS['popular_p99_ms']:.0f} ms",
                    _verdict(ok),
                    f"{100 * r['server_cpu_utilisation']:.0f}%",
                ]
            )
        parts.append(
            f"\n2b. A popular page — one duel of {lat['popular_rounds']} rounds on one daphne, N viewers (each loads "
            "the page, then its WebSocket, all at once); latency from each viewer's connection on; settled: tokens "
            "written once every viewer had its first message (the joins' page loads and catch-ups done)\n"
            + table(
                [
                    "viewers",
                    "failed / late",
                    "tokens",
                    "samples",
                    "p50/p99 (all)",
                    "p50/p99 (settled)",
                    "max",
                    "missed",
                    "messages",
                    "goal p99",
                    "",
                    "server CPU",
                ],
                rows,
            )
        )
    goals = scale_goals(results)
    if goals:
        parts.append("\nScale goals (issues #18, #31)\n" + table(["goal", "measured", ""], goals))
    if inproc and "token_growth" in inproc:
        tg = inproc["token_growth"]
        rows = []
        for rounds, r in tg["duel"].items():
            per_turn = r["agora_prompt_per_turn"]
            full = r["full_prompt_per_turn"]
            goal = f"≤ {GOALS['growth_ratio_at_8']}" if int(rounds) == 8 else ""
            ok = r["ratio"] <= GOALS["growth_ratio_at_8"] if int(rounds) == 8 else None
            rows.append(
                [
                    f"duel × {rounds}",
                    r["turns"],
                    f"{per_turn[0]} → {per_turn[-1]}",
                    f"{full[0]} → {full[-1]}",
                    r["agora_total"],
                    r["full_total"],
                    f"{r['ratio']:.3f}",
                    goal,
                    _verdict(ok),
                ]
            )
        panel = tg["panel"]
        if panel.get("cap"):
            ok = panel["counted_against_cap"] <= panel["cap"]
            rows.append(
                [
                    "panel (cap)",
                    panel["turns"],
                    "",
                    "",
                    panel["counted_against_cap"],
                    f"cap {panel['cap']}",
                    f"{panel['counted_against_cap'] / panel['cap']:.3f}",
                    "≤ 1 (cap)",
                    _verdict(ok),
                ]
            )
        parts.append(
            f"\n3. Token growth — prompt tokens (server-counted), replies of ~{tg['reply_tokens']} tokens; "
            "full history = the same prompt + every earlier turn\n"
            + table(
                [
                    "debate",
                    "turns",
                    "Agora prompt/turn",
                    "full-history/turn",
                    "Agora total",
                    "full-history total",
                    "ratio",
                    "goal",
                    "",
                ],
                rows,
            )
        )
    if inproc:
        rows = []
        for name, r in inproc["critical_path"].items():
            ok = r["db_commits_per_token"] is not None and r["db_commits_per_token"] <= GOALS["commits_per_token"]
            rows.append(
                [
                    name,
                    r["streamed_tokens"],
                    r["turns"],
                    r["db_writes_total"],
                    f"{r['db_writes_per_token']:.3f}",
                    f"{r['db_writes_per_turn']:.1f}",
                    r["db_commits"],
                    f"{r['db_commits_per_token']:.3f}",
                    f"commits ≤ {GOALS['commits_per_token']} / token",
                    _verdict(ok),
                ]
            )
        parts.append(
            "\n4. Database writes — INSERT/UPDATE/DELETE statements and write transactions during section 1\n"
            + table(
                [
                    "format",
                    "tokens",
                    "turns",
                    "writes",
                    "per token",
                    "per turn",
                    "commits",
                    "commits/token",
                    "goal",
                    "",
                ],
                rows,
            )
        )
    per_core = results.get("per_core")
    if per_core:
        parts.append("\n" + report_per_core(per_core))
    for key in ("workers", "workers_pinned"):
        if results.get(key):
            parts.append("\n" + report_workers(results[key]))
    browser = results.get("browser")
    if browser:
        from bench.browser import report_browser

        parts.append("\n" + report_browser(browser))
    return "\n".join(parts)


def _pct(value) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _level_cells(r: dict) -> list:
    """A set-up level's viewers and latencies, as sections 2c and 5 both print them."""
    return [
        f"{r['viewers']} ({r['viewer_error_count']} failed)",
        r["peak_concurrent_streams"],
        r["streamed_tokens"],
        _ms(r["p50_ms"]),
        _ms(r["p99_ms"]),
        _ms(r["max_ms"]),
    ]


def _parts_cells(c: dict) -> list:
    """The CPU of the parts around the web side (share of one core), and the machine's."""
    return [_pct(c["web"]), _pct(c["postgres"]), _pct(c["redis"]), _pct(c["viewers"] + c["fake"]), _pct(c["machine"])]


def _count_answer(label: str, found: dict, goal: float, none_over: str = "") -> str:
    best, over = found["max_debates_within_goal"], found["first_debates_over_goal"]
    return f"{label}: {best if best is not None else 'none'} debates within p99 ≤ {goal:.0f} ms" + (
        f", {over} over" if over is not None else none_over
    )


def report_per_core(pc: dict) -> str:
    if "skipped" in pc:
        return f"2c. One process per core — skipped: {pc['skipped']}"
    goal = pc["goal_p99_ms"]
    rows, answers = [], []
    for p, found in pc["processes"].items():
        for n, r in sorted(found["levels"].items(), key=lambda item: int(item[0])):
            c = r["cpu"]
            per_1k = r["cpu_s_per_1000_tokens"]
            rows.append(
                [p, n, *_level_cells(r), r["missing"], f"≤ {goal:.0f} ms", _verdict(r["passed"])]
                + ["—" if per_1k is None else f"{per_1k:.2f} s", *_parts_cells(c)]
            )
        answers.append(_count_answer(f"{p} process(es)", found, goal))
    return (
        "2c. One process per core — `manage.py serve --processes P` (one socket, debates in-process), PostgreSQL + "
        "Redis; duels of 1 round, 3 viewers each; CPU: share of one core (web: the P processes together; "
        "machine: of all cores)\n"
        + table(
            [
                "processes",
                "debates",
                "viewers",
                "peak streams",
                "tokens",
                "p50",
                "p99",
                "max",
                "missed",
                "goal p99",
                "",
                "CPU/1k tokens",
                "web CPU",
                "PostgreSQL",
                "Redis",
                "viewers+fake",
                "machine",
            ],
            rows,
        )
        + "\n"
        + "\n".join(answers)
    )


def report_workers(w: dict) -> str:
    if "skipped" in w:
        return f"5. Scale-out — skipped: {w['skipped']}"
    goal = w["goal_p99_ms"]
    rows, answers = [], []
    for k, found in w["counts"].items():
        if "skipped" in found:
            answers.append(f"{k} worker(s): not measured — {found['skipped']}")
            continue
        for n, r in found["levels"].items():
            c = r["cpu"]
            rows.append(
                [k, n, *_level_cells(r), _ms(r["steady_p99_ms"]), r["missing"], f"≤ {goal:.0f} ms"]
                + [_verdict(r["passed"]), " + ".join(_pct(x) for x in c["workers"]), *_parts_cells(c)]
            )
        answers.append(_count_answer(f"{k} worker(s)", found, goal, ", none over (search stopped)"))
    title = (
        "5b. Scale-out, pinned — each worker on a core of its own, everything else on the cores left"
        if w.get("pinned")
        else "5. Scale-out"
    )
    return (
        f"{title} — one daphne + K agora_workers ({w['threads_per_worker']} threads each), PostgreSQL + Redis; "
        f"duels of {w['rounds']} round(s), {w['viewers_per_debate']} viewers each, fake model at "
        f"{w['token_delay'] * 1000:.0f} ms/token; CPU: share of one core (machine: of all cores)\n"
        + table(
            [
                "workers",
                "debates",
                "viewers",
                "peak streams",
                "tokens",
                "p50",
                "p99",
                "max",
                "steady p99",
                "missed",
                "goal p99",
                "",
                "worker CPU",
                "web CPU",
                "PostgreSQL",
                "Redis",
                "viewers+fake",
                "machine",
            ],
            rows,
        )
        + "\n"
        + "\n".join(answers)
    )


def update_readme(text: str, mark: str = "bench:latest") -> None:
    if not README.exists():
        return
    content = README.read_text()
    block = f"<!-- {mark} -->\n```\n{text}\n```\n<!-- /{mark} -->"
    new, count = re.subn(rf"<!-- {mark} -->.*?<!-- /{mark} -->", lambda _: block, content, flags=re.S)
    if count:
        README.write_text(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,10,100", help="concurrent debates per latency level")
    parser.add_argument("--viewers", type=int, default=3, help="WebSocket viewers per debate")
    parser.add_argument("--token-delay", type=float, default=0.03, help="seconds between tokens (latency)")
    parser.add_argument("--reply-tokens", type=int, default=100, help="reply length before field lines (latency)")
    parser.add_argument("--rounds", type=int, default=1, help="duel rounds per latency debate")
    parser.add_argument(
        "--search-steps", type=int, default=3, help="latency levels beyond --levels to find the largest count (0: none)"
    )
    parser.add_argument("--popular", default="100,300,1000", help="viewers of one shared debate (empty: skip)")
    parser.add_argument(
        "--popular-rounds", type=int, default=6, help="duel rounds of the popular debate (long enough for every join)"
    )
    parser.add_argument("--critical-token-delay", type=float, default=0.01)
    parser.add_argument("--critical-reply-tokens", type=int, default=150)
    parser.add_argument("--skip-inproc", action="store_true", help="skip sections 1, 3 and 4")
    parser.add_argument("--skip-latency", action="store_true", help="skip section 2")
    parser.add_argument("--update-readme", action="store_true", help="write the table into bench/README.md")
    parser.add_argument(
        "--workers", action="store_true", help="also run section 5 (scale-out; PostgreSQL and Redis, ~7 min)"
    )
    parser.add_argument(
        "--per-core", action="store_true", help="also run section 2c (one process per core; PostgreSQL and Redis)"
    )
    parser.add_argument("--per-core-processes", default=f"1,{len(os.sched_getaffinity(0))}")
    parser.add_argument("--per-core-budget", type=float, default=240, help="seconds of search per process count")
    parser.add_argument("--per-core-levels", default="", help="run exactly these debate counts (no search)")
    parser.add_argument("--workers-counts", default="1,2", help="worker processes to measure (section 5)")
    parser.add_argument("--workers-budget", type=float, default=180, help="seconds of search per worker count")
    parser.add_argument("--workers-levels", default="", help="run exactly these debate counts (no search)")
    parser.add_argument(
        "--workers-pin",
        action="store_true",
        help="also run section 5 with each worker on a core of its own (taskset; K workers need K + 1 cores)",
    )
    parser.add_argument("--workers-threads", type=int, default=32, help="--threads of each agora_worker")
    parser.add_argument(
        "--browser", action="store_true", help="also run section 7 (the browser's share: page cost, 10 live pages)"
    )
    parser.add_argument(
        "--local-quality", action="store_true", help="also run section 6 (the bundled model's output, ~35 min)"
    )
    args = parser.parse_args(argv)
    args.levels = [int(x) for x in args.levels.split(",") if x.strip()]
    args.popular = [int(x) for x in args.popular.split(",") if x.strip()]
    args.workers_counts = [int(x) for x in args.workers_counts.split(",") if x.strip()]
    args.workers_levels = [int(x) for x in args.workers_levels.split(",") if x.strip()]
    args.per_core_processes = [int(x) for x in args.per_core_processes.split(",") if x.strip()]
    args.per_core_levels = [int(x) for x in args.per_core_levels.split(",") if x.strip()]

    started = time.monotonic()
    OUT.mkdir(parents=True, exist_ok=True)
    work = OUT / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print("preparing the database …", file=sys.stderr, flush=True)
    template = prepare(work)
    results: dict = {"when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "machine": machine(), "goals": GOALS}
    if not args.skip_inproc:
        print("sections 1, 3, 4 (in-process) …", file=sys.stderr, flush=True)
        results["inproc"] = run_inproc(work, template, args)
    if not args.skip_latency:
        print("section 2 (real server) …", file=sys.stderr, flush=True)
        results["latency"] = run_latency(work, template, args)
    if args.per_core:
        print("section 2c (one process per core: PostgreSQL, Redis) …", file=sys.stderr, flush=True)
        results["per_core"] = run_per_core(work, args)
    if args.workers:
        print("section 5 (scale-out: web + workers, PostgreSQL, Redis) …", file=sys.stderr, flush=True)
        results["workers"] = run_workers(work, args)
    if args.workers_pin:
        print("section 5b (scale-out, each worker on a core of its own) …", file=sys.stderr, flush=True)
        results["workers_pinned"] = run_workers(work, args, pin=True)
    if args.browser:
        print("section 7 (the browser's share: Chromium) …", file=sys.stderr, flush=True)
        from bench.browser import run_browser

        results["browser"] = run_browser(work, template, token_delay=args.token_delay, reply_tokens=args.reply_tokens)
    results["took_s"] = time.monotonic() - started
    text = report(results)
    print(text)
    saved = results
    alone = [k for k in ("workers", "workers_pinned", "per_core", "browser") if k in results]
    if alone and args.skip_inproc and args.skip_latency and (OUT / "latest.json").exists():
        # Sections 2c, 5 or 7 alone: add their figures to the last full run's instead of replacing them.
        saved = {**json.loads((OUT / "latest.json").read_text()), **{k: results[k] for k in alone}}
    (OUT / "latest.json").write_text(json.dumps(saved, ensure_ascii=False, indent=1))
    (OUT / "latest.txt").write_text((text if saved is results else report(saved)) + "\n")
    if args.update_readme:
        if not (args.skip_inproc and args.skip_latency):
            apart = ("workers", "workers_pinned", "per_core")  # each has a block of its own in the README
            update_readme(report({k: v for k, v in results.items() if k not in apart}))
        if args.per_core:
            head = text.split("\n", 1)[0]
            update_readme(f"{head}\n\n{report_per_core(results['per_core'])}", PER_CORE_README_MARK)
        if args.workers or args.workers_pin:
            head = text.split("\n", 1)[0]
            parts = [report_workers(saved[k]) for k in ("workers", "workers_pinned") if k in saved]
            update_readme(f"{head}\n\n" + "\n\n".join(parts), WORKERS_README_MARK)
    shutil.rmtree(work, ignore_errors=True)
    if args.local_quality:
        # A process of its own: it sets up Django on a throw-away database and starts the model.
        print("section 6 (the bundled model's output) …", file=sys.stderr, flush=True)
        quality = [sys.executable, str(ROOT / "bench" / "local_quality.py"), "--out", str(OUT / "local_quality.json")]
        return subprocess.run(quality, cwd=ROOT).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
