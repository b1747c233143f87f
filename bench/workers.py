"""Section 5: scale-out — how many concurrent debates K workers drive before p99 passes 100 ms.

A cluster as docs/production.md describes it, on one machine: one daphne web process (DEBUG off)
and K `manage.py agora_worker` processes (`--threads` high enough that threads are never the
limit), on a shared PostgreSQL database (a fresh copy of a prepared template per K) and Redis as
the channel layer (`AGORA_RUNNER=worker`). The fake OpenAI server runs in a process of its own at a
fixed token delay (bench/fakeproc.py), exactly as in section 2.

One level = N duels started through the start form, three viewers each, measured with section 2's
machinery (bench/latency.py: `_level` starts and watches, `latencies` matches the fake server's
`token_times` to what each viewer rebuilt; the turn rows are read from PostgreSQL). The processes
stay up between the levels of one K; a level starts once the workers report no running debate.

For each K the number of debates is doubled (2, 4, 8, …) until a level misses (p99 > 100 ms or a
viewer failed), then bisected between the last level that passed and the first that missed, while
the time budget lasts. The answer is the largest N that passed (and the first N that missed).

`--pin` (`bench/run.py --workers-pin`) gives each worker a core of its own (taskset) and puts
everything else — the web process, PostgreSQL, Redis, the fake model, the viewers — on the cores
left: the count one worker holds when nothing else competes for its core. K workers need K + 1
cores; a count that does not fit is reported as skipped, with the reason.

CPU per level, from just before the first debate is started until the last viewer saw the end:
each process's utime + stime (/proc/PID/stat) over the level's wall time (100% = one core) for the
web process, each worker, Redis, PostgreSQL (the postmaster with every backend, exited ones
included through the postmaster's cutime/cstime), the fake server and the benchmark's own viewers;
and the whole machine's busy share (/proc/stat, 100% = every core busy).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.latency import CLK_TCK, _level, cpu_seconds, latencies, max_overlap, peak_rss_mb  # noqa: E402
from testkit.servers import AgoraServer, AgoraWorker, prepare_database  # noqa: E402

POSTGRES = os.environ.get("AGORA_BENCH_POSTGRES", "postgres://agora:agora@127.0.0.1:5432/postgres")
REDIS = os.environ.get("AGORA_BENCH_REDIS", "redis://127.0.0.1:6379/0")
P99_GOAL_MS = 100.0


class BenchWorker(AgoraWorker):
    """testkit.servers's worker with as many threads (debates at once) as the benchmark needs."""

    threads = 32
    interval = 0.5
    cores: set[int] | None = None  # pinned to these cores (taskset: every thread it starts inherits them)

    def command(self) -> list[str]:
        command = super().command()
        command[command.index("--threads") + 1] = str(self.threads)
        command[command.index("--interval") + 1] = str(self.interval)
        return _pinned(command, self.cores)

    def running(self) -> int:
        with urllib.request.urlopen(self.url + "/healthz", timeout=5) as response:
            return json.loads(response.read())["debates"]


class BenchWeb(AgoraServer):
    cores: set[int] | None = None

    def command(self) -> list[str]:
        return _pinned(super().command(), self.cores)


def _pinned(command: list[str], cores: set[int] | None) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, sorted(cores))), *command] if cores else command


class Pinning:
    """`--pin`: each worker on a core of its own, and everything else — the web process, PostgreSQL
    and its backends, Redis, the fake model and this process's viewers — on the cores left. Needs
    one core more than there are workers; restored on exit."""

    def __init__(self, workers: int, fake_pid: int):
        cores = sorted(os.sched_getaffinity(0))
        self.possible = len(cores) > workers
        self.all = set(cores)
        self.worker_cores = [{c} for c in cores[len(cores) - workers :]]
        self.rest = set(cores[: len(cores) - workers])
        self.others = [pid for pid, _ in _procs("postgres") + _procs("redis-server")] + [fake_pid]

    def __enter__(self):
        self._set(self.rest)
        return self

    def __exit__(self, *exc):
        self._set(self.all)

    def _set(self, cores: set[int]) -> None:
        spec = ",".join(map(str, sorted(cores)))
        for pid in self.others:  # -a: every thread; backends forked later inherit the postmaster's
            subprocess.run(["taskset", "-a", "-p", "-c", spec, str(pid)], capture_output=True, check=False)
        for tid in os.listdir("/proc/self/task"):  # this process: the viewers' threads
            try:
                os.sched_setaffinity(int(tid), cores)
            except OSError:
                pass


# -- CPU accounting --------------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _procs(name: str) -> list[tuple[int, int]]:
    """(pid, ppid) of every process whose comm is `name`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append((int(entry.name), int(_stat(int(entry.name))[1])))
            except OSError:
                pass
    return found


def postgres_cpu() -> float:
    """CPU seconds PostgreSQL has used so far: the postmaster, its reaped backends (cutime and
    cstime) and its live ones, so backends that come and go between two readings still count."""
    procs = _procs("postgres")
    pids = {pid for pid, _ in procs}
    total = 0.0
    for pid, ppid in procs:
        try:
            f = _stat(pid)
        except OSError:
            continue
        total += int(f[11]) + int(f[12])
        if ppid not in pids:  # the postmaster
            total += int(f[13]) + int(f[14])
    return total / CLK_TCK


def redis_cpu() -> float:
    total = 0.0
    for pid, _ in _procs("redis-server"):
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every core so far (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # guest time is already in user
    return total - idle, total


def self_cpu() -> float:
    times = os.times()
    return times.user + times.system


class CpuMeter:
    """`web_cpu`: the web side's CPU seconds so far, when it is not the one process `web` (the
    processes of `manage.py serve --processes N`, section 2c)."""

    def __init__(self, web: AgoraServer, workers: list[BenchWorker], fake_pid: int, web_cpu=None):
        self.web, self.workers, self.fake_pid = web, workers, fake_pid
        self.web_cpu = web_cpu or (lambda: cpu_seconds(web.process.pid))

    def read(self) -> dict:
        return {
            "web": self.web_cpu(),
            "workers": [cpu_seconds(w.process.pid) for w in self.workers],
            "postgres": postgres_cpu(),
            "redis": redis_cpu(),
            "fake": cpu_seconds(self.fake_pid),
            "viewers": self_cpu(),
            "machine": machine_busy(),
            "at": time.monotonic(),
        }

    @staticmethod
    def utilisation(before: dict, after: dict) -> dict:
        wall = after["at"] - before["at"]
        out = {k: (after[k] - before[k]) / wall for k in ("web", "postgres", "redis", "fake", "viewers")}
        out["workers"] = [(a - b) / wall for a, b in zip(after["workers"], before["workers"], strict=True)]
        busy = after["machine"][0] - before["machine"][0]
        total = after["machine"][1] - before["machine"][1]
        out["machine"] = busy / total if total else None
        return out


# -- the cluster -----------------------------------------------------------------------------------


def _admin():
    import psycopg

    return psycopg.connect(POSTGRES, autocommit=True, connect_timeout=5)


def _url(name: str) -> str:
    return POSTGRES.rsplit("/", 1)[0] + f"/{name}"


def services_ok() -> str:
    """'' when PostgreSQL and Redis answer, else why not."""
    try:
        _admin().close()
    except Exception as error:  # noqa: BLE001 - any failure means "no server here"
        return f"PostgreSQL is not reachable at {POSTGRES} ({error}); run bin/start-services"
    try:
        import redis

        redis.Redis.from_url(REDIS, socket_connect_timeout=2).ping()
    except Exception as error:  # noqa: BLE001
        return f"Redis is not reachable at {REDIS} ({error}); run bin/start-services"
    return ""


def database_env(conn_max_age: int) -> dict:
    """0: the production default, psycopg's pool; else persistent connections without the pool."""
    return {"DATABASE_POOL": "0", "DATABASE_CONN_MAX_AGE": str(conn_max_age)} if conn_max_age else {}


def cluster_env(conn_max_age: int = 0) -> dict:
    return {
        **database_env(conn_max_age),
        "AGORA_WS_PER_USER": "100000",
        "AGORA_WS_PER_DEBATE": "100000",
        "REDIS_URL": REDIS,
        "AGORA_RUNNER": "worker",
        "AGORA_MAX_RUNNING_PER_USER": "100000",
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
    }


def turn_rows(url: str):
    def rows():
        import psycopg

        with psycopg.connect(url) as conn:
            return conn.execute("SELECT id, debate_id, messages FROM debates_turn").fetchall()

    return rows


def _wait_idle(workers: list[BenchWorker], timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if sum(w.running() for w in workers) == 0:
                return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def measure_level(meter: CpuMeter, server, fake, url, debates, *, viewers_per, rounds, timeout, tag, settle=None):
    """One level on a running set-up (section 5's workers, section 2c's process set): the
    viewers' latencies, their failures and the CPU of each part. `settle`: called after the
    level, before the CPU is read as final (section 5 waits for its workers to go idle).
    Returns the result, and the meter's readings before and after for the caller's own figures."""
    fake.reset()
    before = meter.read()
    viewers, figures = asyncio.run(_level(server, debates, viewers_per, rounds, timeout, tag))
    after = meter.read()
    extra = settle() if settle else None
    requests = [r for r in fake.dump() if r["finished"] is not None]
    tokens = sum(len(r["tokens"]) for r in requests)
    result = latencies(requests, viewers, turn_rows(url))
    result.update(figures)
    errors = sum(1 for v in viewers if v.error)
    result.update(
        {
            "debates": debates,
            "viewers": len(viewers),
            "viewer_error_count": errors,
            "viewer_errors": [v.error for v in viewers if v.error][:5],
            "frames_received": sum(len(v.frames) for v in viewers),
            "requests": len(requests),
            "streamed_tokens": tokens,
            "peak_concurrent_streams": max_overlap(requests),
            "cpu": CpuMeter.utilisation(before, after),
            "web_cpu_s_per_1000_tokens": 1000 * (after["web"] - before["web"]) / tokens if tokens else None,
        }
    )
    result["passed"] = result["p99_ms"] is not None and result["p99_ms"] <= P99_GOAL_MS and not errors
    return result, before, after, extra


def measure(web, workers, fake, url, debates, *, viewers_per, rounds, timeout, tag) -> dict:
    meter = CpuMeter(web, workers, fake.process.pid)
    result, before, after, idle = measure_level(
        meter,
        web,
        fake,
        url,
        debates,
        viewers_per=viewers_per,
        rounds=rounds,
        timeout=timeout,
        tag=tag,
        settle=lambda: _wait_idle(workers),
    )
    tokens = result["streamed_tokens"]
    worker_cpu = sum(after["workers"][i] - before["workers"][i] for i in range(len(workers)))
    result["worker_cpu_s_per_1000_tokens"] = 1000 * worker_cpu / tokens if tokens else None
    result["idle_after"] = idle
    return result


def search(run, *, start: int, budget_s: float, levels: list[int] | None, max_debates: int) -> dict:
    """Doubling from `start` until a level misses, then bisection, within `budget_s` (a level is
    not started when the last one's length would overrun the budget). `levels`: run exactly these."""
    began = time.monotonic()
    results: dict[int, dict] = {}
    last = 0.0

    def fits() -> bool:
        return time.monotonic() - began + last <= budget_s

    def one(n: int) -> bool:
        nonlocal last
        t = time.monotonic()
        results[n] = run(n)
        last = time.monotonic() - t
        return results[n]["passed"]

    if levels:
        for n in levels:
            one(n)
    else:
        n = start
        while n <= max_debates and (not results or fits()):
            if not one(n):
                break
            n *= 2
        while True:
            passed = [k for k, r in results.items() if r["passed"]]
            missed = [k for k, r in results.items() if not r["passed"]]
            lo = max(passed, default=0)
            hi = min((k for k in missed if k > lo), default=None)
            if hi is None or hi - lo <= max(1, lo // 8) or not fits():
                break
            one((lo + hi) // 2)
    passed = [k for k, r in results.items() if r["passed"]]
    missed = [k for k, r in results.items() if not r["passed"]]
    best = max(passed, default=None)
    return {
        "levels": {str(k): results[k] for k in sorted(results)},
        "max_debates_within_goal": best,
        "first_debates_over_goal": min((k for k in missed if best is None or k > best), default=None),
        "search_s": time.monotonic() - began,
    }


def run_workers(
    work: Path,
    *,
    counts: list[int],
    token_delay: float,
    reply_tokens: int,
    viewers_per: int = 3,
    rounds: int = 1,
    start: int = 2,
    budget_s: float = 180,
    levels: list[int] | None = None,
    max_debates: int = 256,
    threads: int = 32,
    timeout: float = 120,
    conn_max_age: int = 0,
    web_conn_max_age: int = 0,
    pin: bool = False,
    log=print,
) -> dict:
    from bench.fakeproc import FakeProcess

    why = services_ok()
    if why:
        return {"skipped": why}
    env = cluster_env(conn_max_age)
    admin = _admin()
    template = f"agora_bench_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{template}"')
    databases = [template]
    fake = None
    out: dict = {
        "token_delay": token_delay,
        "reply_tokens": reply_tokens,
        "rounds": rounds,
        "viewers_per_debate": viewers_per,
        "threads_per_worker": threads,
        "conn_max_age": conn_max_age,
        "web_conn_max_age": web_conn_max_age,
        "goal_p99_ms": P99_GOAL_MS,
        "budget_s_per_count": budget_s,
        "pinned": pin,
        "counts": {},
    }
    try:
        prepare_database(_url(template), {**os.environ, **env})
        fake = FakeProcess(token_delay, reply_tokens, work).start()
        for k in counts:
            pinning = Pinning(k, fake.process.pid) if pin else None
            if pinning and not pinning.possible:
                why = f"a core for each of {k} worker(s) and one for the rest: {k + 1} cores; here {len(pinning.all)}"
                out["counts"][str(k)] = {"skipped": why}
                continue
            name = f"{template}_k{k}"
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            databases.append(name)
            url = _url(name)
            kdir = work / f"workers-{k}"
            kdir.mkdir(parents=True, exist_ok=True)
            # By default every process uses psycopg's pool (the production settings). Persistent
            # connections (--conn-max-age) only ever in the workers: under ASGI every request runs
            # on a thread of its own, and its kept connection would outlive the thread.
            web_env = {k: v for k, v in env.items() if k not in ("DATABASE_POOL", "DATABASE_CONN_MAX_AGE")}
            web = BenchWeb(
                kdir, fake.base_url, database_url=url, name="web", **web_env, **database_env(web_conn_max_age)
            )
            workers = [BenchWorker(kdir, fake.base_url, database_url=url, name=f"worker{i}", **env) for i in range(k)]
            for i, worker in enumerate(workers):
                worker.threads = threads
                worker.cores = pinning.worker_cores[i] if pinning else None
            web.cores = pinning.rest if pinning else None
            started = []
            try:
                if pinning:
                    pinning.__enter__()
                for process in (web, *workers):
                    started.append(process.start(timeout=60))

                def run(n: int, k=k, web=web, workers=workers, url=url) -> dict:
                    log(f"  workers: {k} worker(s), {n} debate(s) × {viewers_per} viewers …")
                    r = measure(
                        web,
                        workers,
                        fake,
                        url,
                        n,
                        viewers_per=viewers_per,
                        rounds=rounds,
                        timeout=timeout,
                        tag=f"k{k}-n{n}",
                    )
                    c = r["cpu"]
                    log(
                        f"  workers: {k}×{n}: p50 {_ms(r['p50_ms'])} p99 {_ms(r['p99_ms'])} "
                        f"failed {r['viewer_error_count']} · CPU web {_pct(c['web'])} workers "
                        f"{' + '.join(_pct(w) for w in c['workers'])} pg {_pct(c['postgres'])} "
                        f"redis {_pct(c['redis'])} "
                        f"fake {_pct(c['fake'])} viewers {_pct(c['viewers'])} machine {_pct(c['machine'])} "
                        f"in {r['elapsed_s']:.1f}s"
                    )
                    return r

                # Never more debates than the workers' threads: beyond that they would queue.
                out["counts"][str(k)] = search(
                    run, start=start, budget_s=budget_s, levels=levels, max_debates=min(max_debates, k * threads)
                )
                out["counts"][str(k)]["peak_rss_mb"] = {
                    "web": peak_rss_mb(web.process.pid),
                    "workers": [peak_rss_mb(w.process.pid) for w in workers],
                }
            finally:
                if pinning:
                    pinning.__exit__(None, None, None)
                for process in started:
                    process.stop()
    finally:
        if fake:
            fake.stop()
        for name in reversed(databases):
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
    return out


def _ms(value) -> str:
    return "—" if value is None else f"{value:.0f} ms"


def _pct(value) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="section 5 alone (bench/run.py --workers runs it too)")
    parser.add_argument("--counts", default="1,2")
    parser.add_argument("--levels", default="", help="run exactly these debate counts (no search)")
    parser.add_argument("--budget", type=float, default=180)
    parser.add_argument("--token-delay", type=float, default=0.03)
    parser.add_argument("--reply-tokens", type=int, default=100)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument(
        "--conn-max-age", type=int, default=0, help="the workers' DATABASE_CONN_MAX_AGE (0: the connection pool)"
    )
    parser.add_argument("--web-conn-max-age", type=int, default=0, help="the web process's (leaks under ASGI)")
    parser.add_argument("--pin", action="store_true", help="each worker on a core of its own, the rest on the others")
    args = parser.parse_args()
    workdir = ROOT / "bench" / "out" / "work-workers"
    workdir.mkdir(parents=True, exist_ok=True)
    result = run_workers(
        workdir,
        counts=[int(x) for x in args.counts.split(",")],
        token_delay=args.token_delay,
        reply_tokens=args.reply_tokens,
        budget_s=args.budget,
        threads=args.threads,
        conn_max_age=args.conn_max_age,
        web_conn_max_age=args.web_conn_max_age,
        pin=args.pin,
        levels=[int(x) for x in args.levels.split(",") if x.strip()] or None,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(json.dumps(result, ensure_ascii=False, indent=1, default=str)[:4000])
