"""Decode rate, time to first token, start-up time and memory of the local model server.

    .venv/bin/python bench/local_decode.py [--tokens 128] [--repeats 3] [--rounds 2]
        [--old-python /tmp/old-llama/bin/python] [--parallel-check]

The server is the one Agora runs: xllamacpp's llama.cpp server as `debates.providers.local.serve`,
started by `LocalModelServer` (the app's supervisor). Two paths read it, on the same GGUF, prompt,
threads, context size and greedy sampling:
  raw HTTP       plain http.client reading the SSE stream
  Agora client   the client the engine uses (LocalModelClient, the openai SDK path)

--old-python PY also runs the server Agora used before, `python -m llama_cpp.server` from
llama-cpp-python[server]==0.3.36 installed in another environment (it compiles for about ten
minutes; keep it outside the repository), started with the flags the old supervisor passed and
read through the same two paths (the old Agora client asked for no stream usage).

Decode rate = (tokens - 1) / (time of last token - time of first token); TTFT = request to first
text. The prompt asks for a long answer and every run must stop on max_tokens ("length"), so each
run produces exactly --tokens tokens. Each run also records how many cores other processes kept busy
meanwhile (from /proc): the medians are taken over quiet runs (--quiet), since on 2 cores one busy
neighbour stalls llama.cpp's threads at every layer. Each round starts every server afresh (start-up time = launch
to a healthy `GET /v1/models`), does one warm-up per path, then --repeats runs per path, the paths
alternating, and stops it: one model in memory at a time. The servers' order alternates between
rounds, so drifting load hits both alike. RSS is the server process's resident memory after load
and after the runs; peak is its high-water mark.

--parallel-check: two requests at once against a server with two slots (n_parallel 2) against the
same two one after the other on one slot, to see whether batching pays on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from debates.providers.local import LocalModelClient, LocalModelServer, LocalWeights  # noqa: E402
from debates.providers.openai_compat import OpenAICompatibleClient  # noqa: E402

QUESTION = "请详细介绍中国古代的四大发明：每一项的发明时间、原理、传播过程和历史影响，各写一段。"
NEW = "xllamacpp"
OLD = "llama-cpp-python"


# --history N puts N copies of this (about 60 tokens) before the question, as a debate's earlier
# turns would be: TTFT then measures prompt processing on a debate-sized prompt.
HISTORY = "此前的讨论：造纸术降低了书写材料的成本，使知识得以更广泛地传播；印刷术进一步提高了复制书籍的效率。"
history_copies = 0


def messages(run: str) -> list[dict[str, str]]:
    """The fixed prompt, opened with a run label so no run reuses another's cached prompt
    (llama.cpp keeps the last prompt's KV cache; a hit would make TTFT look free)."""
    return [
        {"role": "system", "content": f"[{run}] 你是一位知识渊博的中文历史老师。"},
        {"role": "user", "content": HISTORY * history_copies + QUESTION},
    ]


def rates(first: float, last: float, start: float, tokens: int) -> tuple[float, float]:
    return first - start, (tokens - 1) / (last - first) if last > first else float("nan")


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int | None]) -> tuple[float, float]:
    """(busy CPU seconds of the whole machine, CPU seconds of `pids`) since boot, from /proc."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    ours = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ours += int(stat[11]) + int(stat[12])  # utime, stime
    return (user + nice + system + irq + softirq + steal) / _TICK, ours / _TICK


async def foreign_load(pids: list[int | None], run):
    """Run `run()` and say how many cores other processes kept busy meanwhile: llama.cpp's threads
    wait for each other at every layer, so one busy neighbour can halve the decode rate."""
    busy0, ours0 = cpu_seconds(pids)
    began = time.perf_counter()
    result = await run()
    busy1, ours1 = cpu_seconds(pids)
    return result, ((busy1 - busy0) - (ours1 - ours0)) / (time.perf_counter() - began)


def memory(pid: int | None) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in MiB."""
    found = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) // 1024
    except (OSError, ValueError):
        pass
    return found


def raw_http(port: int, key: str, run: str, tokens: int, usage: bool) -> tuple[float, float, str, int | None]:
    payload = {"model": "x", "messages": messages(run), "max_tokens": tokens, "temperature": 0, "stream": True}
    if usage:
        payload["stream_options"] = {"include_usage": True}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    start = time.perf_counter()
    conn.request(
        "POST",
        "/v1/chat/completions",
        json.dumps(payload).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    response = conn.getresponse()
    first = last = 0.0
    finish = None
    counted = None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[5:])
        if chunk.get("usage"):
            counted = chunk["usage"].get("completion_tokens")
        for choice in chunk.get("choices") or []:
            finish = choice.get("finish_reason") or finish
            if (choice.get("delta") or {}).get("content"):
                last = time.perf_counter()
                first = first or last
    conn.close()
    ttft, rate = rates(first, last, start, tokens)
    return ttft, rate, finish or "?", counted


async def through_client(client: OpenAICompatibleClient, run: str, tokens: int) -> tuple[float, float, str, int | None]:
    start = time.perf_counter()
    stream = client.stream(messages(run), max_tokens=tokens, temperature=0)
    first = last = 0.0
    async for _ in stream:
        last = time.perf_counter()
        first = first or last
    ttft, rate = rates(first, last, start, tokens)
    done = stream.completion
    return ttft, rate, done.finish_reason or "?", None if done.usage_estimated else done.completion_tokens


class Subject:
    """One server under test: how to start it, where it listens, and the Agora-side client."""

    def __init__(self, name: str, model: str, args: argparse.Namespace) -> None:
        self.name = name
        cache = Path(args.cache_dir).expanduser()
        if name == NEW:
            self.client: OpenAICompatibleClient = LocalModelClient(
                model_path=model, cache_dir=cache, threads=args.threads, ctx=args.ctx, timeout=300
            )
            self.server: LocalModelServer | None = None
            self.usage = True
        else:
            old_python = args.old_python

            def command(port: int, key: str) -> list[str]:
                return [
                    old_python, "-m", "llama_cpp.server",
                    "--model", model,
                    "--model_alias", "old",
                    "--host", "127.0.0.1",
                    "--port", str(port),
                    "--n_threads", str(args.threads),
                    "--n_ctx", str(args.ctx),
                    "--api_key", key,
                    "--interrupt_requests", "false",
                    "--logits_all", "false",
                ]  # fmt: skip

            self.server = LocalModelServer(
                model,
                cache_dir=cache / "bench-old",
                alias="old",
                command=command,
                required_modules=(),
                startup_timeout=300,
            )
            self.client = None  # made once the port is known
            self.usage = False  # llama_cpp.server 0.3.36 sends no usage in a stream

    async def start(self) -> float:
        began = time.perf_counter()
        if self.name == NEW:
            await self.client.ensure_ready()
            self.server = self.client.server
        else:
            await asyncio.to_thread(self.server.ensure_running)
            self.client = OpenAICompatibleClient(
                self.server.base_url, self.server.api_key, "old", name="old-local", timeout=300, streams_usage=False
            )
        return time.perf_counter() - began

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self.server is not None:
            self.server.stop()


async def measure(subjects: list[Subject], args: argparse.Namespace, results, startups, mem) -> None:
    for round_no in range(1, args.rounds + 1):
        order = subjects if round_no % 2 else list(reversed(subjects))
        for subject in order:
            startup = await subject.start()
            startups[subject.name].append(startup)
            pid = subject.server.pid
            loaded = memory(pid).get("VmRSS", 0)
            print(f"round {round_no}: {subject.name} server healthy in {startup:.1f} s, RSS {loaded} MiB", flush=True)
            port, key = subject.server.port, subject.server.api_key
            paths = {
                "raw HTTP": lambda run, s=subject, p=port, k=key: asyncio.to_thread(
                    raw_http, p, k, run, args.tokens, s.usage
                ),
                "Agora client": lambda run, s=subject: through_client(s.client, run, args.tokens),
            }
            for n, path in enumerate(paths.values()):  # warm-up, not counted
                await path(f"{subject.name}-warm-{round_no}-{n}")
            for repeat in range(1, args.repeats + 1):
                for n, (path_name, path) in enumerate(paths.items()):
                    run = f"{subject.name}-{round_no}-{repeat}-{n}"
                    result, foreign = await foreign_load([pid, os.getpid()], lambda p=path, r=run: p(r))
                    results[(subject.name, path_name)].append((round_no, *result, foreign))
            after = memory(pid)
            mem[subject.name].append((loaded, after.get("VmRSS", 0), after.get("VmHWM", 0)))
            await subject.stop()


async def parallel_check(model: str, args: argparse.Namespace) -> None:
    """Two requests: one slot, one after the other, against two slots at once."""
    print("\n-- n_parallel check: two requests of", args.tokens, "tokens each")
    for slots in (1, 2):
        server = LocalModelServer(
            model,
            cache_dir=Path(args.cache_dir).expanduser() / "bench-parallel",
            threads=args.threads,
            ctx=args.ctx,
            extra_args=("--parallel", str(slots)),
            startup_timeout=300,
        )
        await asyncio.to_thread(server.ensure_running)
        try:
            await asyncio.to_thread(raw_http, server.port, server.api_key, f"pwarm-{slots}", 8, True)
            for attempt in range(args.repeats):
                runs = [f"p{slots}-{attempt}-{i}" for i in range(2)]
                began = time.perf_counter()
                busy0, ours0 = cpu_seconds([server.pid, os.getpid()])
                if slots == 1:
                    done = [
                        await asyncio.to_thread(raw_http, server.port, server.api_key, r, args.tokens, True)
                        for r in runs
                    ]
                else:
                    done = await asyncio.gather(
                        *(asyncio.to_thread(raw_http, server.port, server.api_key, r, args.tokens, True) for r in runs)
                    )
                wall = time.perf_counter() - began
                busy1, ours1 = cpu_seconds([server.pid, os.getpid()])
                foreign = ((busy1 - busy0) - (ours1 - ours0)) / wall
                tokens = sum(d[3] or args.tokens for d in done)
                print(
                    f"n_parallel {slots}: both done in {wall:5.1f} s, aggregate {tokens / wall:5.1f} tok/s; "
                    f"TTFT {', '.join(f'{d[0]:.2f}' for d in done)} s; per-request decode "
                    f"{', '.join(f'{d[1]:.1f}' for d in done)} tok/s; others used {foreign:.1f} cores",
                    flush=True,
                )
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="fresh starts of each server (0: none)")
    parser.add_argument("--threads", type=int, default=int(os.environ.get("AGORA_LOCAL_THREADS") or os.cpu_count()))
    parser.add_argument("--ctx", type=int, default=int(os.environ.get("AGORA_LOCAL_CTX") or 4096))
    parser.add_argument("--cache-dir", default=os.environ.get("AGORA_CACHE_DIR") or Path.home() / ".cache" / "agora")
    parser.add_argument("--old-python", help="a python with llama-cpp-python[server]==0.3.36, to compare against")
    parser.add_argument("--quiet", type=float, default=0.15, help="a run is quiet if others used <= this many cores")
    parser.add_argument("--parallel-check", action="store_true", help="also compare n_parallel 2 with 1")
    parser.add_argument("--history", type=int, default=0, help="earlier-turn paragraphs before the question")
    args = parser.parse_args()
    global history_copies
    history_copies = args.history

    t0 = time.perf_counter()
    model = os.environ.get("AGORA_LOCAL_MODEL") or str(LocalWeights(args.cache_dir).ensure())
    print(f"model {model}\nthreads {args.threads}, n_ctx {args.ctx}, {args.tokens} tokens")
    print(f"weights ready in {time.perf_counter() - t0:.1f} s (join + verify on first use, else marker check)")
    print(f"load average before: {os.getloadavg()[0]:.2f} (other work on these cores skews every path)", flush=True)

    subjects = [Subject(NEW, model, args)]
    if args.old_python:
        subjects.append(Subject(OLD, model, args))
    results: dict[tuple[str, str], list] = defaultdict(list)
    startups: dict[str, list[float]] = defaultdict(list)
    mem: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    asyncio.run(measure(subjects, args, results, startups, mem))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if results:
        report(results, startups, mem, args)
    if args.parallel_check:
        asyncio.run(parallel_check(model, args))


def report(results, startups, mem, args: argparse.Namespace) -> None:

    quiet = [r for runs in results.values() for r in runs if r[5] <= args.quiet]
    print(
        f"\n{len(quiet)} of {sum(map(len, results.values()))} runs were quiet (other processes used <= {args.quiet} "
        "cores meanwhile); the medians below are over quiet runs where a path has any, else over all"
    )
    print(
        f"\n{'server':<17} {'path':<13} {'quiet':>5} {'TTFT s':>7} {'tok/s median':>13} {'tok/s best':>11}"
        "  runs (tok/s @ others' cores)"
    )
    for (name, path), runs in results.items():
        chosen = [r for r in runs if r[5] <= args.quiet] or runs
        ttft = statistics.median(r[1] for r in chosen)
        median = statistics.median(r[2] for r in chosen)
        best = max(r[2] for r in runs)
        each = ", ".join(f"{r[2]:.1f}@{r[5]:.1f}" for r in runs)
        n_quiet = len(chosen) if chosen is not runs else 0
        print(f"{name:<17} {path:<13} {n_quiet:>5} {ttft:>7.2f} {median:>13.1f} {best:>11.1f}  {each}")
        if any(r[3] != "length" for r in runs):
            print(f"  warning: runs ended with {[r[3] for r in runs]}, not all 'length': token counts are guesses")
        counted = {r[4] for r in runs if r[4] is not None}
        if counted and counted != {args.tokens}:
            print(f"  warning: the server counted {sorted(counted)} completion tokens, not {args.tokens}")
    print(f"\n{'server':<17} {'start-up s (each)':<24} {'RSS loaded MiB':>15} {'RSS after':>10} {'peak':>6}")
    for name, times in startups.items():
        loaded = statistics.median(m[0] for m in mem[name])
        after = statistics.median(m[1] for m in mem[name])
        peak = max(m[2] for m in mem[name])
        each = ", ".join(f"{t:.1f}" for t in times)
        print(f"{name:<17} {each:<24} {loaded:>15.0f} {after:>10.0f} {peak:>6}")

    if args.old_python:
        print()
        for path in ("raw HTTP", "Agora client"):
            new, old = results[(NEW, path)], results[(OLD, path)]
            new_q, old_q = [r for r in new if r[5] <= args.quiet], [r for r in old if r[5] <= args.quiet]
            if new_q and old_q:
                ratio = statistics.median(r[2] for r in new_q) / statistics.median(r[2] for r in old_q)
                ttft = statistics.median(r[1] for r in new_q) / statistics.median(r[1] for r in old_q)
                basis = f"quiet runs ({len(new_q)} / {len(old_q)})"
            else:
                ratio = statistics.median(r[2] for r in new) / statistics.median(r[2] for r in old)
                ttft = statistics.median(r[1] for r in new) / statistics.median(r[1] for r in old)
                basis = "all runs (too few quiet ones)"
            best = max(r[2] for r in new) / max(r[2] for r in old)
            print(
                f"{path}: decode {NEW} / {OLD} = {ratio:.2f} on medians of {basis}, {best:.2f} on best runs; "
                f"TTFT ratio {ttft:.2f} (goal: decode >= 1.00, no slower)"
            )
        print(
            "on a busy 2-core machine llama.cpp's threads stall whenever anything else runs: compare medians\n"
            "only from a quiet machine (load average near 0); 'best' is the least disturbed run."
        )


if __name__ == "__main__":
    main()
