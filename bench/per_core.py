"""Section 2c: one web process per core — how many debates × 3 viewers `manage.py serve
--processes P` holds within p99 100 ms, for P = 1 and P = the cores.

The set-up docs/production.md describes for one machine: P daphne processes on one socket, each
serving pages and WebSockets and running debates in-process (AGORA_RUNNER=inprocess,
AGORA_PROCESSES=P), on PostgreSQL (a fresh copy of a prepared template per P) with Redis as the
channel layer. P = 1 runs the same command and services with one process, so the two differ only in
the processes. The fake OpenAI server runs in a process of its own at a fixed token delay
(bench/fakeproc.py), as in sections 2 and 5.

A level is section 2's: N duels started through the start form, three viewers each (a page load,
then its WebSocket), every token's write → every viewer's receipt (bench/latency.py). Which process
serves a page, a start or a socket is the kernel's choice: the socket is shared. For each P the
count is searched as in section 5 (doubling from `start`, then bisection, within a time budget), and
the goal level (100 debates) is run as well when the search did not reach it.

CPU per level: the P processes' utime + stime over the level's wall time (100% = one core),
PostgreSQL, Redis, the fake server, the viewers, and the whole machine's busy share.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.latency import cpu_seconds  # noqa: E402
from bench.workers import REDIS, CpuMeter, _admin, _pct, _url, measure_level, search, services_ok  # noqa: E402
from testkit.servers import ServedSet, prepare_database  # noqa: E402

P99_GOAL_MS = 100.0
GOAL_DEBATES = 100


def served_cpu(server: ServedSet) -> float:
    """CPU seconds the set's daphne processes have used so far."""
    total = 0.0
    for pid in server.children():
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def measure(server: ServedSet, fake, url: str, debates: int, *, viewers_per: int, rounds: int, tag: str) -> dict:
    meter = CpuMeter(server, [], fake.process.pid, web_cpu=lambda: served_cpu(server))
    result, *_readings = measure_level(
        meter, server, fake, url, debates, viewers_per=viewers_per, rounds=rounds, timeout=240, tag=tag
    )
    # The P processes together, as section 2 counts its one process.
    result["cpu_s_per_1000_tokens"] = result["web_cpu_s_per_1000_tokens"]
    _settle(server, url)
    return result


def _settle(server: ServedSet, url: str, timeout: float = 60) -> None:
    """Wait until no debate is running, so the next level starts on quiet processes."""
    import psycopg

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg.connect(url) as conn:
            query = "SELECT count(*) FROM debates_debate WHERE status IN ('queued', 'loading', 'running')"
            if conn.execute(query).fetchone()[0] == 0:
                return
        time.sleep(0.5)


def run_per_core(
    work: Path,
    *,
    processes: list[int],
    token_delay: float,
    reply_tokens: int,
    viewers_per: int = 3,
    rounds: int = 1,
    start: int = 10,
    budget_s: float = 240,
    levels: list[int] | None = None,
    log=print,
) -> dict:
    from bench.fakeproc import FakeProcess

    why = services_ok()
    if why:
        return {"skipped": why}
    env = {
        "REDIS_URL": REDIS,
        "AGORA_RUNNER": "inprocess",
        "AGORA_MAX_RUNNING_PER_USER": "100000",
        "AGORA_WS_PER_USER": "100000",
        "AGORA_WS_PER_DEBATE": "100000",
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
    }
    admin = _admin()
    template = f"agora_bench_pc_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{template}"')
    databases = [template]
    fake = None
    out: dict = {"goal_p99_ms": P99_GOAL_MS, "goal_debates": GOAL_DEBATES, "budget_s": budget_s, "processes": {}}
    try:
        prepare_database(_url(template), {**os.environ, **env})
        fake = FakeProcess(token_delay, reply_tokens, work).start()
        for p in processes:
            name = f"{template}_p{p}"
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            databases.append(name)
            url = _url(name)
            pdir = work / f"per-core-{p}"
            pdir.mkdir(parents=True, exist_ok=True)
            server = ServedSet(pdir, fake.base_url, database_url=url, name="serve", **env)
            server.processes = p
            try:
                server.start(timeout=90)

                def run(n: int, p=p, server=server, url=url) -> dict:
                    log(f"  per core: {p} process(es), {n} debate(s) × {viewers_per} viewers …")
                    r = measure(server, fake, url, n, viewers_per=viewers_per, rounds=rounds, tag=f"p{p}-n{n}")
                    c = r["cpu"]
                    log(
                        f"  per core: {p}×{n}: p50 {r['p50_ms'] or 0:.0f} ms p99 {r['p99_ms'] or 0:.0f} ms "
                        f"failed {r['viewer_error_count']} · CPU web {_pct(c['web'])} pg {_pct(c['postgres'])} "
                        f"redis {_pct(c['redis'])} fake {_pct(c['fake'])} viewers {_pct(c['viewers'])} "
                        f"machine {_pct(c['machine'])} in {r['elapsed_s']:.1f}s"
                    )
                    return r

                found = search(run, start=start, budget_s=budget_s, levels=levels, max_debates=GOAL_DEBATES)
                if not levels and str(GOAL_DEBATES) not in found["levels"]:
                    found["levels"][str(GOAL_DEBATES)] = run(GOAL_DEBATES)  # the goal itself, always measured
                out["processes"][str(p)] = found
            finally:
                server.stop()
    finally:
        if fake:
            fake.stop()
        for name in reversed(databases):
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    return out


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description="section 2c alone (bench/run.py --per-core runs it too)")
    parser.add_argument("--processes", default=f"1,{len(os.sched_getaffinity(0))}")
    parser.add_argument("--levels", default="", help="run exactly these debate counts (no search)")
    parser.add_argument("--budget", type=float, default=240)
    parser.add_argument("--token-delay", type=float, default=0.03)
    parser.add_argument("--reply-tokens", type=int, default=100)
    args = parser.parse_args()
    workdir = ROOT / "bench" / "out" / "work-per-core"
    workdir.mkdir(parents=True, exist_ok=True)
    result = run_per_core(
        workdir,
        processes=[int(x) for x in args.processes.split(",")],
        token_delay=args.token_delay,
        reply_tokens=args.reply_tokens,
        budget_s=args.budget,
        levels=[int(x) for x in args.levels.split(",") if x.strip()] or None,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(json.dumps(result, ensure_ascii=False, indent=1, default=str)[:6000])
