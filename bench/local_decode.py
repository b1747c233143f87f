"""Decode rate and time to first token of the bundled local model: raw llama.cpp vs through Agora.

    .venv/bin/python bench/local_decode.py [--tokens 128] [--repeats 3] [--threads N]

Three paths on the same GGUF, prompt, threads, context size and greedy sampling:
  raw in-process   llama_cpp.Llama(...).create_chat_completion(stream=True): llama.cpp itself
  raw HTTP         the same llama_cpp.server child Agora runs, read with plain http.client SSE
  Agora client     LocalModelClient.stream(): the openai SDK path every provider uses

Decode rate = (tokens - 1) / (time of last token - time of first token); TTFT = request to first
text. The prompt asks for a long answer and every run must stop on max_tokens ("length"), so each
path produces exactly --tokens tokens. One warm-up per path, then the median of --repeats runs
(the paths alternate). Goal: Agora's decode rate >= 0.9 x raw in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from debates.providers.local import SERVER_KEY, LocalModelClient, LocalWeights  # noqa: E402

QUESTION = "请详细介绍中国古代的四大发明：每一项的发明时间、原理、传播过程和历史影响，各写一段。"


def messages(run: str) -> list[dict[str, str]]:
    """The fixed prompt, opened with a run label so no run reuses another's cached prompt
    (llama.cpp keeps the last prompt's KV cache; a hit would make TTFT look free)."""
    return [
        {"role": "system", "content": f"[{run}] 你是一位知识渊博的中文历史老师。"},
        {"role": "user", "content": QUESTION},
    ]


def rates(first: float, last: float, start: float, tokens: int) -> tuple[float, float]:
    return first - start, (tokens - 1) / (last - first) if last > first else float("nan")


def raw_in_process(llm, run: str, tokens: int) -> tuple[float, float, str]:
    start = time.perf_counter()
    first = last = 0.0
    finish = None
    for chunk in llm.create_chat_completion(messages(run), max_tokens=tokens, temperature=0, stream=True):
        choice = chunk["choices"][0]
        finish = choice.get("finish_reason") or finish
        if choice["delta"].get("content"):
            last = time.perf_counter()
            first = first or last
    ttft, rate = rates(first, last, start, tokens)
    return ttft, rate, finish or "?"


def raw_http(port: int, run: str, tokens: int) -> tuple[float, float, str]:
    body = json.dumps(
        {"model": "x", "messages": messages(run), "max_tokens": tokens, "temperature": 0, "stream": True}
    ).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    conn.request(
        "POST",
        "/v1/chat/completions",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {SERVER_KEY}"},
    )
    response = conn.getresponse()
    first = last = 0.0
    finish = None
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        choice = json.loads(line[5:])["choices"][0]
        finish = choice.get("finish_reason") or finish
        if choice["delta"].get("content"):
            last = time.perf_counter()
            first = first or last
    conn.close()
    ttft, rate = rates(first, last, start, tokens)
    return ttft, rate, finish or "?"


async def through_agora(client: LocalModelClient, run: str, tokens: int) -> tuple[float, float, str]:
    async with client.limiter:
        start = time.perf_counter()
        stream = client.stream(messages(run), max_tokens=tokens, temperature=0)
        first = last = 0.0
        async for _ in stream:
            last = time.perf_counter()
            first = first or last
    ttft, rate = rates(first, last, start, tokens)
    return ttft, rate, stream.completion.finish_reason or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("AGORA_LOCAL_THREADS") or os.cpu_count()))
    parser.add_argument("--ctx", type=int, default=int(os.environ.get("AGORA_LOCAL_CTX") or 4096))
    parser.add_argument("--cache-dir", default=os.environ.get("AGORA_CACHE_DIR") or Path.home() / ".cache" / "agora")
    parser.add_argument("--skip-in-process", action="store_true", help="compare with raw HTTP only")
    args = parser.parse_args()

    t0 = time.perf_counter()
    model = os.environ.get("AGORA_LOCAL_MODEL") or str(LocalWeights(args.cache_dir).ensure())
    prepare = time.perf_counter() - t0
    print(f"model {model}\nthreads {args.threads}, n_ctx {args.ctx}, {args.tokens} tokens, median of {args.repeats}")
    print(f"weights ready in {prepare:.1f} s (join + verify on first use, else marker check)")
    results: dict[str, list[tuple[float, float, str]]] = {}
    print(f"load average before: {os.getloadavg()[0]:.2f} (other work on these cores skews every path)")

    async def measure() -> None:
        llm = None
        if not args.skip_in_process:
            from llama_cpp import Llama

            t0 = time.perf_counter()
            llm = Llama(model_path=model, n_threads=args.threads, n_ctx=args.ctx, verbose=False)
            print(f"raw in-process Llama: loaded in {time.perf_counter() - t0:.1f} s")
        client = LocalModelClient(model_path=model, cache_dir=args.cache_dir, threads=args.threads, ctx=args.ctx)
        t0 = time.perf_counter()
        await client.ensure_ready()
        print(f"llama_cpp.server child: started and healthy in {time.perf_counter() - t0:.1f} s")
        port = client.server.port
        paths = {
            "raw HTTP to llama_cpp.server": lambda run: asyncio.to_thread(raw_http, port, run, args.tokens),
            "Agora LocalModelClient": lambda run: through_agora(client, run, args.tokens),
        }
        if llm is not None:
            paths = {
                "raw llama.cpp in-process": lambda run: asyncio.to_thread(raw_in_process, llm, run, args.tokens),
                **paths,
            }
        for n, (name, path) in enumerate(paths.items()):  # warm-up, not counted
            await path(f"warm-{n}")
            results[name] = []
        for repeat in range(1, args.repeats + 1):  # interleaved, so drifting load hits all alike
            for n, (name, path) in enumerate(paths.items()):
                results[name].append(await path(f"{repeat}-{n}"))
        client.stop()

    asyncio.run(measure())
    print(f"load average after: {os.getloadavg()[0]:.2f}")

    baseline_key = next(iter(results))
    base_median = statistics.median(r[1] for r in results[baseline_key])
    base_best = max(r[1] for r in results[baseline_key])
    print()
    print(f"{'path':<30} {'TTFT s':>7} {'tok/s median':>13} {'ratio':>6} {'tok/s best':>11} {'ratio':>6}  runs (tok/s)")
    for name, runs in results.items():
        ttft = statistics.median(r[0] for r in runs)
        median = statistics.median(r[1] for r in runs)
        best = max(r[1] for r in runs)
        each = ", ".join(f"{r[1]:.1f}" for r in runs)
        print(
            f"{name:<30} {ttft:>7.2f} {median:>13.1f} {median / base_median:>6.2f} {best:>11.1f} "
            f"{best / base_best:>6.2f}  {each}"
        )
        if any(r[2] != "length" for r in runs):
            print(f"  warning: a run ended with {[r[2] for r in runs]}, not 'length': its token count is a guess")
    agora = results["Agora LocalModelClient"]
    for other in (k for k in results if k != "Agora LocalModelClient"):
        paired = statistics.median(a[1] / b[1] for a, b in zip(agora, results[other], strict=True))
        print(f"paired ratio Agora / {other} (median over repeats, adjacent runs): {paired:.2f}")
    print(
        f"\nratio = decode rate / {baseline_key}'s; goal for Agora >= 0.90. 'best' is the least disturbed run:"
        "\non a busy 2-core machine llama.cpp's threads stall whenever anything else runs, so compare"
        "\nmedians only from a quiet machine (load average near 0)."
    )


if __name__ == "__main__":
    main()
