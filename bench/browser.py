"""Section 7 (--browser): the browser's share of a live page (issue 31.1).

Everything runs on a real daphne (testkit.servers.AgoraServer, as section 2: one process, the
in-memory channel layer, SQLite, DEBUG off) against the fake OpenAI server in a process of its own
(bench/fakeproc.py) at 30 ms per token, with Debian's Chromium driven by Playwright's async API
(never a downloaded browser).

**Page cost per token.** ONE live page in a browser of its own. Through a DevTools session
(`Performance.enable`, then `Performance.getMetrics` every 250 ms) the renderer main thread's
TaskDuration, ScriptDuration, LayoutDuration and RecalcStyleDuration are sampled, together with
the CPU time (utime + stime, all threads: main, compositor, raster) of Chromium's renderer
processes and of every Chromium process (browser, GPU/display compositor, utilities). The cost
of a window is what the counters grew in it, divided by the tokens the fake server wrote in it:

  - a duel of one round: from the first sample after the page's socket opened to one second after
    the debate ended (three turns and their boundaries: new turn articles, the finished turns'
    Markdown, the report);
  - a panel's first parallel round, five speeches streaming at once: the samples strictly inside
    [the fifth of the five requests started, the first of them finished] (the steady per-frame
    cost; turn boundaries left out).

**Ten pages.** Ten duels of one round, one live page each (one browser, ten tabs). A
MutationObserver installed before the page's own scripts records, per turn, the characters that
reached `#turn-N-text` (appended deltas; a swapped-in running text counts whole, a finished turn
article covers all of it) with the page's `performance.timeOrigin + performance.now()`. A token's
latency is the time its last character was in that page's DOM minus the time the fake server
wrote it (`token_times`). The two clocks differ: the fake server's are `time.monotonic()`
(CLOCK_MONOTONIC, system-wide), the page's are the wall clock at navigation plus a monotonic
elapsed time. So each page's offset is measured, not assumed: five `evaluate` round trips read the
page's clock bracketed by `time.monotonic()` here, and the one with the shortest round trip gives
offset = page clock - midpoint (error at most half that round trip, reported). Tokens written
before the page's socket opened (`htmx:wsOpen`) are not counted for it (the page carried them).
The observer runs in the same task as the swap's microtask checkpoint, so the time includes the
page's own work after the message (its `htmx:wsAfterMessage` handlers), not the paint.
Also: daphne's CPU (share of one core), all Chromium processes' CPU, the machine's busy share
(/proc/stat) over the run and the load average at its end.

    .venv/bin/python -m bench.browser [--runs 2] [--only cost|pages]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.latency import cpu_seconds, percentile, turn_index  # noqa: E402
from bench.workers import machine_busy  # noqa: E402
from testkit.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from testkit.http import Browser  # noqa: E402
from testkit.servers import USERS, AgoraServer  # noqa: E402

DUEL = "念佛与参禅，哪条路更适合现代人修行？"
PANEL = "我们团队是否应该在明年全面转向远程办公？"
GOALS = {"p50_ms": 30.0, "p99_ms": 100.0}
ENDED = ("done", "failed", "stopped", "refused")
WHOLE = 10**9
METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")
SERVER_ENV = {
    "AGORA_MAX_RUNNING_PER_USER": "100000",
    "AGORA_WS_PER_USER": "100000",
    "AGORA_WS_PER_DEBATE": "100000",
    "AGORA_PROVIDER_CONCURRENCY": "8",  # a panel's five turns stream at once (the default is 4)
    "DEBUG": "0",
    "LOG_LEVEL": "WARNING",
}

# Installed before any of the page's scripts (Playwright's add_init_script). Records
# [turn pk, characters in #turn-N-text so far (-1: the finished article, i.e. all of it), page ms].
OBSERVER = r"""
(() => {
  const clock = () => performance.timeOrigin + performance.now();
  const rec = window.__agoraBench = { opened: 0, marks: [] };
  const got = new Map();
  const TEXT = /^turn-(\d+)-text$/, TURN = /^turn-(\d+)$/;
  document.addEventListener("htmx:wsOpen", () => { if (!rec.opened) rec.opened = clock(); });
  function scan(node, now) {
    if (node.nodeType !== 1) return;
    const texts = node.matches(".text.live[id]") ? [node] : node.querySelectorAll(".text.live[id]");
    for (const el of texts) {
      const m = TEXT.exec(el.id);
      if (m) { got.set(m[1], el.textContent.length); rec.marks.push([+m[1], el.textContent.length, now]); }
    }
    const done = node.matches("article.turn-done[id]") ? [node] : node.querySelectorAll("article.turn-done[id]");
    for (const el of done) { const m = TURN.exec(el.id); if (m) rec.marks.push([+m[1], -1, now]); }
  }
  new MutationObserver((records) => {
    const now = clock();
    for (const r of records) {
      const m = r.target.id && TEXT.exec(r.target.id);
      if (m && !r.removedNodes.length) {  // an appended delta (a label dropped replaces: skipped)
        let n = got.get(m[1]) || 0;
        for (const a of r.addedNodes) n += a.textContent.length;
        got.set(m[1], n);
        rec.marks.push([+m[1], n, now]);
        continue;
      }
      for (const a of r.addedNodes) scan(a, now);
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""


# -- processes --------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        tree[int(stat.rsplit(")", 1)[1].split()[1])].append(int(entry))
    return tree


def chromium_cpu() -> tuple[float, float]:
    """CPU seconds (utime + stime) of this process's Chromium descendants: (renderers, all)."""
    tree, renderers, total = _children(), 0.0, 0.0
    stack = list(tree.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, []))
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            if not comm.startswith("chrom"):
                continue
            cpu = cpu_seconds(pid)
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        total += cpu
        if b"--type=renderer" in cmdline:
            renderers += cpu
    return renderers, total


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# -- the pieces ---------------------------------------------------------------------------------


def collect_static(work: Path) -> Path:
    """DEBUG is off, so the pages' scripts and styles come from STATIC_ROOT through WhiteNoise, as in
    production: collected once per run, from the tree as it is (the scripts being measured)."""
    root = work / "static"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update({"STATIC_ROOT": str(root), "DEBUG": "0", "DATABASE_URL": f"sqlite:///{work / 'collect.sqlite3'}"})
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    return root


def start_server(workdir: Path, fake, template: Path, static: Path) -> AgoraServer:
    workdir.mkdir(parents=True, exist_ok=True)
    fake.reset()
    server = AgoraServer(workdir, fake.base_url, template, STATIC_ROOT=str(static), **SERVER_ENV)
    os.sync()
    server.start(timeout=60)
    return server


async def launch(playwright):
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is not installed (apt-get install chromium)")
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


async def signed_in_context(browser, server: AgoraServer):
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, locale="zh-CN")
    page = await context.new_page()
    await page.goto(f"{server.url}/accounts/login/")
    await page.fill("#id_username", "alice")
    await page.fill("#id_password", USERS["alice"])
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{server.url}/")
    await page.close()
    return context


async def status(page) -> str:
    return await page.evaluate(
        "(() => { const s = document.getElementById('debate-status'); return s ? s.dataset.status : ''; })()"
    )


async def clock_offset(page) -> tuple[float, float]:
    """(page clock - monotonic, in s; half the shortest round trip, in ms)."""
    best = None
    for _ in range(5):
        before = time.monotonic()
        ms = await page.evaluate("performance.timeOrigin + performance.now()")
        after = time.monotonic()
        if best is None or after - before < best[1]:
            best = (ms / 1000 - (before + after) / 2, after - before)
    return best[0], 1000 * best[1] / 2


def tokens_between(requests: list[dict], start: float, end: float) -> int:
    return sum(1 for r in requests for t in r["token_times"] if start < t <= end)


def window_cost(samples: list[dict], start: float, end: float, requests: list[dict]) -> dict:
    """What the counters grew between the first sample at/after `start` and the last at/before `end`."""
    inside = [s for s in samples if start <= s["t"] <= end]
    if len(inside) < 2:
        return {"tokens": 0}
    a, b = inside[0], inside[-1]
    tokens = tokens_between(requests, a["t"], b["t"])
    out = {"tokens": tokens, "seconds": b["t"] - a["t"]}
    for name in METRICS:
        out[f"{name}_ms"] = 1000 * (b["m"][name] - a["m"][name])
    out["renderer_cpu_ms"] = 1000 * (b["renderers"] - a["renderers"])
    out["chromium_cpu_ms"] = 1000 * (b["chromium"] - a["chromium"])
    if tokens:
        for key in [k for k in out if k.endswith("_ms")]:
            out[key.replace("_ms", "_ms_per_token")] = out[key] / tokens
    return out


async def page_cost(fake, template: Path, static: Path, workdir: Path, fmt: str) -> dict:
    """One live page of a `fmt` debate (duel: its whole stream; panel: its first parallel round)."""
    from playwright.async_api import async_playwright

    server = start_server(workdir, fake, template, static)
    try:
        http = Browser(server.url)
        http.log_in("alice", USERS["alice"])
        async with async_playwright() as playwright:
            browser = await launch(playwright)
            context = await signed_in_context(browser, server)
            page = await context.new_page()
            await page.add_init_script(OBSERVER)
            fields = (
                {"topic": DUEL, "format": "duel", "rounds": "1"}
                if fmt == "duel"
                else {"topic": PANEL, "format": "panel"}
            )
            loop = asyncio.get_running_loop()
            pk = await loop.run_in_executor(None, http.start_debate, fields)
            await page.goto(f"{server.url}/debates/{pk}/")
            # After the navigation: the page's renderer is the one the session must count in. Thread
            # ticks: the main thread's CPU time, not wall time (which would count waiting for a core).
            cdp = await context.new_cdp_session(page)
            await cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
            samples: list[dict] = []
            ended_at = None
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                metrics = {m["name"]: m["value"] for m in (await cdp.send("Performance.getMetrics"))["metrics"]}
                renderers, chromium = chromium_cpu()
                now = time.monotonic()
                samples.append({"t": now, "m": metrics, "renderers": renderers, "chromium": chromium})
                if ended_at is None:
                    if fmt == "panel":
                        if len(samples) % 4 == 0 and _parallel_round_over(fake):
                            ended_at = now
                    elif await status(page) in ENDED:
                        ended_at = now
                elif now - ended_at > 1.0:
                    break
                await asyncio.sleep(0.25)
            offset, _err = await clock_offset(page)
            opened = await page.evaluate("window.__agoraBench.opened")
            if not opened:
                raise RuntimeError("the live page's socket never opened (are its scripts served?)")
            opened = opened / 1000 - offset
            await browser.close()
        requests = [r for r in fake.dump() if r["token_times"]]
    finally:
        server.stop()
    if fmt == "duel":
        whole = window_cost(samples, opened, samples[-1]["t"], requests)
        whole["window"] = "the whole stream (socket open → 1 s after the end)"
        # One turn streaming alone, its boundaries left out: the longest turn after the socket opened.
        turn = max(requests, key=lambda r: min(r["finished"] or 0, samples[-1]["t"]) - max(r["started"], opened))
        steady = window_cost(samples, max(turn["started"], opened), turn["finished"] or samples[-1]["t"], requests)
        steady["window"] = "one turn streaming (its boundaries left out)"
        return {"duel": whole, "duel-turn": steady}
    first = parallel_round(requests)
    start = max(r["started"] for r in first)
    end = min(r["finished"] or float("inf") for r in first)
    result = window_cost(samples, max(start, opened), end, requests)
    result["window"] = f"{len(first)} turns streaming at once (boundaries left out)"
    return {"panel": result}


def parallel_round(requests: list[dict]) -> list[dict]:
    """The first five requests that all ran at once (each started before any of them finished)."""
    ordered = sorted(requests, key=lambda r: r["started"])
    for i in range(len(ordered) - 4):
        group = ordered[i : i + 5]
        if max(r["started"] for r in group) < min(r["finished"] or float("inf") for r in group):
            return group
    return []


def _parallel_round_over(fake) -> bool:
    """The panel's first parallel round has ended (read from the fake server, not the page)."""
    group = parallel_round(fake.dump())
    return bool(group) and all(r["finished"] is not None for r in group)


async def ten_pages(fake, template: Path, static: Path, workdir: Path, pages_n: int = 10) -> dict:
    from playwright.async_api import async_playwright

    server = start_server(workdir, fake, template, static)
    try:
        http = Browser(server.url)
        http.log_in("alice", USERS["alice"])
        pool = ThreadPoolExecutor(max_workers=8)
        loop = asyncio.get_running_loop()
        async with async_playwright() as playwright:
            browser = await launch(playwright)
            context = await signed_in_context(browser, server)
            await context.add_init_script(OBSERVER)
            errors: list[str] = []
            context.on("weberror", lambda e: errors.append(str(e.error)))
            cpu_before, busy_before = cpu_seconds(server.process.pid), machine_busy()
            chromium_before = chromium_cpu()[1]
            started = time.monotonic()

            async def one(i: int):
                fields = {"topic": f"{DUEL}（browser-{i}）", "format": "duel", "rounds": "1"}
                pk = await loop.run_in_executor(pool, http.start_debate, fields)
                page = await context.new_page()
                await page.goto(f"{server.url}/debates/{pk}/")
                offset = await clock_offset(page)
                deadline = time.monotonic() + 240
                while await status(page) not in ENDED and time.monotonic() < deadline:
                    await asyncio.sleep(0.5)
                return pk, page, offset

            opened = await asyncio.gather(*(one(i) for i in range(pages_n)))
            elapsed = time.monotonic() - started
            cpu = cpu_seconds(server.process.pid) - cpu_before
            busy_after = machine_busy()
            chromium = chromium_cpu()[1] - chromium_before
            load = loadavg()
            records = []
            for pk, page, (offset, err) in opened:
                bench = await page.evaluate("window.__agoraBench")
                records.append({"pk": pk, "offset": offset, "offset_err_ms": err, **bench})
            await browser.close()
        pool.shutdown()
        requests = [r for r in fake.dump() if r["finished"] is not None]
    finally:
        server.stop()
    result = page_latencies(requests, records, server.db)
    result["pages_not_opened"] = sum(1 for r in records if not r["opened"])
    result["page_errors"] = errors[:5]
    busy = (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1])
    result.update(
        {
            "pages": pages_n,
            "elapsed_s": elapsed,
            "daphne_cpu": cpu / elapsed,
            "chromium_cpu": chromium / elapsed,
            "machine_busy": busy,
            "loadavg_end": load,
            "streamed_tokens": sum(len(r["tokens"]) for r in requests),
            "clock_offset_err_ms_max": max(r["offset_err_ms"] for r in records),
        }
    )
    return result


def page_latencies(requests: list[dict], records: list[dict], db) -> dict:
    index = turn_index(db)
    samples: list[float] = []
    settled: list[float] = []  # tokens written once every page was open (the joins' loads done)
    settled_from = max((r["opened"] / 1000 - r["offset"] for r in records if r["opened"]), default=0.0)
    missing = unmatched = 0
    for rec in records:
        if not rec["opened"]:
            continue
        opened = rec["opened"] / 1000 - rec["offset"]
        cover: dict[int, tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
        for pk, length, ms in rec["marks"]:
            times, lengths = cover[pk]
            length = WHOLE if length < 0 else length
            if not lengths or lengths[-1] < length:
                times.append(ms / 1000 - rec["offset"])
                lengths.append(length)
        for r in requests:
            where = index.get(json.dumps(r["messages"], sort_keys=True, ensure_ascii=False))
            if where is None:
                unmatched += 1
                continue
            if where[0] != rec["pk"]:
                continue
            times, lengths = cover.get(where[1], ([], []))
            total = 0
            for token, written in zip(r["tokens"], r["token_times"], strict=True):
                total += len(token)
                if written <= opened:
                    continue
                i = bisect.bisect_left(lengths, total)
                if i == len(lengths):
                    missing += 1
                else:
                    samples.append(times[i] - written)
                    if written > settled_from:
                        settled.append(times[i] - written)
    return {
        "settled_samples": len(settled),
        "settled_p50_ms": 1000 * percentile(settled, 50) if settled else None,
        "settled_p99_ms": 1000 * percentile(settled, 99) if settled else None,
        "samples": len(samples),
        "p50_ms": 1000 * percentile(samples, 50) if samples else None,
        "p90_ms": 1000 * percentile(samples, 90) if samples else None,
        "p99_ms": 1000 * percentile(samples, 99) if samples else None,
        "max_ms": 1000 * max(samples) if samples else None,
        "min_ms": 1000 * min(samples) if samples else None,
        "missing": missing,
        "unmatched_requests": unmatched // max(1, len(records)),
    }


# -- the section --------------------------------------------------------------------------------


def run_browser(
    work: Path, template: Path, *, token_delay: float = 0.03, reply_tokens: int = 100, only: str = ""
) -> dict:
    from bench.fakeproc import FakeProcess

    if not Path(CHROMIUM).exists():
        return {"skipped": f"{CHROMIUM} is not installed (apt-get install chromium)"}
    static = collect_static(work)
    fake = FakeProcess(token_delay, reply_tokens, work).start()
    out: dict = {"token_delay": token_delay, "reply_tokens": reply_tokens}
    try:
        if only in ("", "cost"):
            out["cost"] = {}
            for fmt in ("duel", "panel"):
                out["cost"].update(asyncio.run(page_cost(fake, template, static, work / f"browser-cost-{fmt}", fmt)))
        if only in ("", "pages"):
            out["pages"] = asyncio.run(ten_pages(fake, template, static, work / "browser-pages"))
    finally:
        fake.stop()
    return out


def passes(pages: dict) -> bool:
    return (
        pages.get("p50_ms") is not None
        and pages["p50_ms"] <= GOALS["p50_ms"]
        and pages["p99_ms"] <= GOALS["p99_ms"]
        and not pages["missing"]
        and not pages["pages_not_opened"]
    )


def report_browser(b: dict) -> str:
    from bench.run import _ms, _pct, _verdict, table

    if "skipped" in b:
        return f"7. The browser's share — skipped: {b['skipped']}"
    parts = []
    cost = b.get("cost")
    if cost:
        rows = []
        for fmt, r in cost.items():
            if not r.get("tokens"):
                rows.append([fmt, r.get("window", ""), 0, "—", "—", "—", "—", "—", "—"])
                continue
            rows.append(
                [
                    fmt,
                    r["window"],
                    r["tokens"],
                    f"{r['TaskDuration_ms_per_token']:.2f} ms",
                    f"{r['ScriptDuration_ms_per_token']:.2f} ms",
                    f"{r['LayoutDuration_ms_per_token']:.2f} ms",
                    f"{r['RecalcStyleDuration_ms_per_token']:.2f} ms",
                    f"{r['renderer_cpu_ms_per_token']:.2f} ms",
                    f"{r['chromium_cpu_ms_per_token']:.2f} ms",
                ]
            )
        parts.append(
            "7a. Page cost per token — one live page in Chromium (DevTools Performance metrics of the renderer's main"
            f" thread; process CPU from /proc), fake model at {1000 * b['token_delay']:.0f} ms/token\n"
            + table(
                ["format", "window", "tokens", "task", "script", "layout", "style", "renderer CPU", "all Chromium CPU"],
                rows,
            )
        )
    pages = b.get("pages")
    if pages:
        parts.append(
            f"\n7b. {pages['pages']} live pages in Chromium — {pages['pages']} duels of 1 round, one page each;"
            " token written (fake server) → in the page's DOM (MutationObserver); settled: tokens written once"
            " every page was open\n"
            + table(
                [
                    "pages",
                    "samples",
                    "p50",
                    "p99",
                    "max",
                    "missed",
                    "goal p50/p99",
                    "",
                    "settled p50/p99",
                    "daphne CPU",
                    "Chromium CPU",
                    "machine busy",
                    "load at end",
                ],
                [
                    [
                        pages["pages"],
                        pages["samples"],
                        _ms(pages["p50_ms"]),
                        _ms(pages["p99_ms"]),
                        _ms(pages["max_ms"]),
                        pages["missing"],
                        f"≤ {GOALS['p50_ms']:.0f} / ≤ {GOALS['p99_ms']:.0f} ms",
                        _verdict(passes(pages)),
                        f"{_ms(pages.get('settled_p50_ms'))} / {_ms(pages.get('settled_p99_ms'))}",
                        _pct(pages["daphne_cpu"]),
                        _pct(pages["chromium_cpu"]),
                        _pct(pages["machine_busy"]),
                        pages["loadavg_end"],
                    ]
                ],
            )
        )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--only", choices=("cost", "pages"), default="")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "browser.json"))
    args = parser.parse_args(argv)
    from bench.run import OUT, prepare

    work = OUT / "work-browser"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    template = prepare(work)
    runs = []
    for i in range(args.runs):
        print(f"run {i + 1} (load {loadavg()}) …", file=sys.stderr, flush=True)
        result = run_browser(work / f"run{i}", template, only=args.only)
        runs.append(result)
        print(report_browser(result), flush=True)
    Path(args.out).write_text(json.dumps(runs, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
