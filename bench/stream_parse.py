"""The client's cost of reading a streamed reply, per chunk: the openai SDK's typed stream (what
Agora uses) against the same response read as raw Server-Sent Event lines and `json.loads`.

    .venv/bin/python bench/stream_parse.py [--replies 40] [--tokens 400]

The fake OpenAI server runs in a process of its own with no token delay, so this process's CPU time
(`time.process_time`) is the client's alone: HTTP, SSE decoding, JSON and, for the SDK, building a
`ChatCompletionChunk` model per chunk. Prints microseconds of CPU per chunk for each way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from bench.fakeproc import FakeProcess  # noqa: E402

MESSAGES = [{"role": "user", "content": "念佛与参禅，哪条路更适合现代人修行？"}]


async def typed(client: openai.AsyncOpenAI) -> int:
    chunks = 0
    stream = await client.chat.completions.create(model="fake", messages=MESSAGES, stream=True)
    async for chunk in stream:
        for choice in chunk.choices or []:
            if choice.delta is not None and choice.delta.content:
                chunks += 1
    return chunks


async def raw(client: openai.AsyncOpenAI) -> int:
    chunks = 0
    async with client.chat.completions.with_streaming_response.create(
        model="fake", messages=MESSAGES, stream=True
    ) as response:
        async for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            for choice in json.loads(data).get("choices") or []:
                if (choice.get("delta") or {}).get("content"):
                    chunks += 1
    return chunks


async def measure(base_url: str, replies: int) -> dict:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    out = {}
    for name, read in (("sdk", typed), ("raw", raw)):
        await read(client)  # warm the connection and the imports
        cpu, chunks = time.process_time(), 0
        for _ in range(replies):
            chunks += await read(client)
        out[name] = {"chunks": chunks, "us_per_chunk": 1e6 * (time.process_time() - cpu) / chunks}
    await client.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replies", type=int, default=40)
    parser.add_argument("--tokens", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        fake = FakeProcess(0.0, args.tokens, Path(work)).start()
        try:
            result = asyncio.run(measure(fake.base_url, args.replies))
        finally:
            fake.stop()
    for name, r in result.items():
        print(f"{name:4}  {r['chunks']} chunks  {r['us_per_chunk']:.1f} µs CPU per chunk")
    print(f"raw / sdk: {result['raw']['us_per_chunk'] / result['sdk']['us_per_chunk']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
