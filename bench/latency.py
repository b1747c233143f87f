"""Section 2: token-to-viewer latency on the real server, at N concurrent debates.

One level = a fresh daphne (testkit.servers.AgoraServer: its own copy of the prepared SQLite database,
the in-memory channel layer, DEBUG off) pointed at the fake OpenAI server, which runs in a process
of its own (bench/fakeproc.py). The benchmark signs in as a user, starts N duels through the start
form (POST /debates/new/), and for each debate opens three viewers the way a browser tab does: GET
the live page, read its `data-seq`, connect `/ws/debates/<id>/?after=<seq>` with the session cookie
and an Origin header (a `websockets` client).

Each viewer rebuilds every turn's text from what it receives: the text of running turns in the
catch-up and in new turn articles (`<div class="text live" id="turn-N-text">`), then the delta
fragments appended to it (`<div hx-swap-oob="beforeend:#turn-N-text">`). The fake server records
when it wrote each token (`token_times`, CLOCK_MONOTONIC, comparable across processes); a turn's
requests are matched to its row by their exact messages (the Turn row keeps them). A token's
latency, for one viewer, is the time that viewer received the first message whose rebuilt text of
that turn reaches the token's end, minus the time the token was written. Tokens written before the
viewer's socket was open are not counted for it (the page or the catch-up carried them).

CPU: the server process's utime + stime (/proc/PID/stat, all threads) from just before the first
debate is started until the last viewer saw the end, per 1,000 tokens the fake server streamed.
Memory: the server's VmHWM (peak resident set) at the end.
"""

from __future__ import annotations

import asyncio
import bisect
import html
import json
import os
import re
import resource
import sqlite3
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from testkit.http import Browser  # noqa: E402
from testkit.servers import USERS, AgoraServer  # noqa: E402

TOPIC = "念佛与参禅，哪条路更适合现代人修行？"
LIVE_TEXT = re.compile(r'<div class="text live" id="turn-(\d+)-text">(.*?)</div>', re.S)
DELTA = re.compile(r'<div hx-swap-oob="beforeend:#turn-(\d+)-text">(.*?)</div>', re.S)
DONE = re.compile(r'<article id="turn-(\d+)" class="turn turn-done"')
WHOLE = 10**9  # a finished turn's article (its whole text, as Markdown) covers every token
ENDED = re.compile(r'data-status="(done|failed|stopped|refused)"')
SEQ = re.compile(r'data-seq="(\d+)"')
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Viewer:
    debate: int
    opened: float = 0.0
    frames: list[tuple[float, str]] = field(default_factory=list)
    error: str = ""
    late: bool = False  # arrived after the debate ended
    page: tuple[float, str] | None = None  # (received, HTML): the text the page itself carried


async def watch(viewer: Viewer, browser: Browser, port: int, pool: ThreadPoolExecutor, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    try:
        page = await loop.run_in_executor(pool, browser.get, f"/debates/{viewer.debate}/")
        if ENDED.search(page):
            viewer.late = True  # the page already holds the whole debate: no socket, no samples
            return
        # A page loaded mid-turn already holds that turn's text: what the frames add goes after it.
        viewer.page = (time.monotonic(), page)
        seq = SEQ.search(page).group(1)
        url = f"ws://127.0.0.1:{port}/ws/debates/{viewer.debate}/?after={seq}"
        headers = {"Cookie": browser.cookie_header}
        async with asyncio.timeout(timeout):
            async with connect(
                url,
                origin=browser.base_url,
                additional_headers=headers,
                compression=None,
                max_size=None,
                ping_interval=None,
                proxy=None,
                open_timeout=60,
            ) as ws:
                viewer.opened = time.monotonic()
                async for message in ws:
                    viewer.frames.append((time.monotonic(), message))
                    if ENDED.search(message):
                        break
    except (TimeoutError, OSError, websockets.WebSocketException, urllib.error.URLError, AttributeError) as error:
        viewer.error = f"{type(error).__name__}: {error}"


def coverage(frames: list[tuple[float, str]]) -> dict[int, tuple[list[float], list[int]]]:
    """Per turn pk: the receive times and the rebuilt text's length after each message."""
    texts: dict[int, str] = {}
    cover: dict[int, tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
    for t, message in frames:
        changed = set()
        for m in LIVE_TEXT.finditer(message):
            pk = int(m.group(1))
            texts[pk] = html.unescape(m.group(2))
            changed.add(pk)
        for m in DELTA.finditer(message):
            pk = int(m.group(1))
            texts[pk] = texts.get(pk, "") + html.unescape(m.group(2))
            changed.add(pk)
        for m in DONE.finditer(message):
            times, lengths = cover[int(m.group(1))]
            if not lengths or lengths[-1] < WHOLE:
                times.append(t)
                lengths.append(WHOLE)
        for pk in changed:
            times, lengths = cover[pk]
            if not lengths or lengths[-1] < len(texts[pk]) < WHOLE:
                times.append(t)
                lengths.append(len(texts[pk]))
    return cover


def turn_index(db) -> dict[str, tuple[int, int]]:
    """Exact messages → (debate id, turn pk), from the server's database: a SQLite file, or a
    callable that returns the (id, debate_id, messages) rows of debates_turn (e.g. from PostgreSQL)."""
    index = {}
    if callable(db):
        rows = db()
    else:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT id, debate_id, messages FROM debates_turn").fetchall()
    for pk, debate, messages in rows:
        index[_key(json.loads(messages) if isinstance(messages, str) else messages)] = (debate, pk)
    return index


def _key(messages) -> str:
    return json.dumps(messages, sort_keys=True, ensure_ascii=False)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def latencies(requests: list[dict], viewers: list[Viewer], db) -> dict:
    index = turn_index(db)
    by_debate: dict[int, list[Viewer]] = defaultdict(list)
    for v in viewers:
        by_debate[v.debate].append(v)
    covers = {id(v): coverage(([v.page] if v.page else []) + v.frames) for v in viewers}
    samples: list[float] = []
    steady: list[float] = []  # tokens written once every viewer was connected
    steady_from = max((v.opened for v in viewers), default=0.0)
    # Settled: every viewer has its first message (its page's catch-up), so the joins' work is done.
    settled: list[float] = []
    settled_from = max((v.frames[0][0] for v in viewers if v.frames), default=0.0)
    missing = unmatched = 0
    for r in requests:
        where = index.get(_key(r["messages"]))
        if where is None:
            unmatched += 1
            continue
        debate, pk = where
        ends, total = [], 0
        for token in r["tokens"]:
            total += len(token)
            ends.append(total)
        for v in by_debate.get(debate, []):
            if not v.opened:
                continue  # never connected: counted as a failed viewer, not per token
            times, lengths = covers[id(v)].get(pk, ([], []))
            for end, written in zip(ends, r["token_times"], strict=True):
                if written <= v.opened:
                    continue
                i = bisect.bisect_left(lengths, end)
                if i == len(lengths):
                    missing += 1
                else:
                    samples.append(times[i] - written)
                    if written > steady_from:
                        steady.append(times[i] - written)
                    if written > settled_from:
                        settled.append(times[i] - written)
    return {
        "samples": len(samples),
        "p50_ms": 1000 * percentile(samples, 50) if samples else None,
        "p90_ms": 1000 * percentile(samples, 90) if samples else None,
        "p99_ms": 1000 * percentile(samples, 99) if samples else None,
        "max_ms": 1000 * max(samples) if samples else None,
        "mean_ms": 1000 * sum(samples) / len(samples) if samples else None,
        "steady_samples": len(steady),
        "steady_p50_ms": 1000 * percentile(steady, 50) if steady else None,
        "steady_p99_ms": 1000 * percentile(steady, 99) if steady else None,
        "settled_samples": len(settled),
        "settled_p50_ms": 1000 * percentile(settled, 50) if settled else None,
        "settled_p99_ms": 1000 * percentile(settled, 99) if settled else None,
        "missing": missing,
        "unmatched_requests": unmatched,
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def max_overlap(requests: list[dict]) -> int:
    events = sorted([(r["started"], 1) for r in requests] + [(r["finished"], -1) for r in requests])
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


async def _level(server: AgoraServer, debates: int, viewers_per: int, rounds: int, timeout: float, tag: str):
    browser = Browser(server.url)
    browser.log_in("alice", USERS["alice"])
    pool = ThreadPoolExecutor(max_workers=8)
    loop = asyncio.get_running_loop()
    viewers: list[Viewer] = []
    tasks = []
    pid = server.process.pid
    cpu_before = cpu_seconds(pid)
    me_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()

    async def one(i: int) -> None:
        fields = {"topic": f"{TOPIC}（{tag}-{i}）", "format": "duel", "rounds": str(rounds)}
        pk = await loop.run_in_executor(pool, browser.start_debate, fields)
        for _ in range(viewers_per):
            viewer = Viewer(pk)
            viewers.append(viewer)
            tasks.append(asyncio.ensure_future(watch(viewer, browser, server.port, pool, timeout)))

    await asyncio.gather(*(one(i) for i in range(debates)))
    ramp = time.monotonic() - started
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    cpu = cpu_seconds(pid) - cpu_before
    me_after = resource.getrusage(resource.RUSAGE_SELF)
    pool.shutdown()
    client_cpu = (me_after.ru_utime - me_before.ru_utime) + (me_after.ru_stime - me_before.ru_stime)
    return viewers, {"elapsed_s": elapsed, "ramp_s": ramp, "server_cpu_s": cpu, "client_cpu_s": client_cpu}


def run_level(
    fake,
    template_db: Path,
    workdir: Path,
    debates: int,
    *,
    viewers_per: int = 3,
    rounds: int = 1,
    timeout: float = 240,
    env: dict | None = None,
) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    fake.reset()
    # One user starts every debate and opens every viewer: the per-user and per-debate caps would
    # refuse most of them.
    extra = {
        "AGORA_MAX_RUNNING_PER_USER": "100000",
        "AGORA_WS_PER_USER": "100000",
        "AGORA_WS_PER_DEBATE": "100000",
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        **(env or {}),
    }
    server = AgoraServer(workdir, fake.base_url, template_db, **extra)
    os.sync()  # the fresh copy of the database on disk, so the first checkpoint does not flush it
    server.start(timeout=60)
    try:
        viewers, figures = asyncio.run(_level(server, debates, viewers_per, rounds, timeout, workdir.name))
        rss = peak_rss_mb(server.process.pid)
    finally:
        server.stop()
    requests = [r for r in fake.dump() if r["finished"] is not None]
    tokens = sum(len(r["tokens"]) for r in requests)
    result = latencies(requests, viewers, server.db)
    result.update(figures)
    result.update(
        {
            "debates": debates,
            "viewers": len(viewers),
            "viewer_errors": [v.error for v in viewers if v.error][:5],
            "viewer_error_count": sum(1 for v in viewers if v.error),
            "viewers_late": sum(1 for v in viewers if v.late),
            "frames_received": sum(len(v.frames) for v in viewers),
            "requests": len(requests),
            "streamed_tokens": tokens,
            "peak_concurrent_streams": max_overlap(requests),
            "cpu_s_per_1000_tokens": 1000 * figures["server_cpu_s"] / tokens if tokens else None,
            "server_cpu_utilisation": figures["server_cpu_s"] / figures["elapsed_s"],
            "peak_rss_mb": rss,
        }
    )
    return result
