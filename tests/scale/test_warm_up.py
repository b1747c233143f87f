"""A process that serves debates loads what its first debate needs before it serves (debates.warm):
measured cold, a worker's first debates all stalled 220–280 ms mid-stream while its event loop
imported the SDK's HTTP stack and the Redis client, and its database thread the price table.

Each case runs in a fresh interpreter (this one has imported everything long ago), streams one
reply from the fake server over loopback, sends one message through the channel layer, prices a
call, resolves a URL and loads a page's and a frame's templates, and reports which modules that
imported and which templates it compiled (~70 ms for all of ours); and how many objects a full garbage collection
walked after start-up (each walk stopped every thread for ~200 ms when it was all of them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.servers import REDIS, redis_ok

ROOT = Path(__file__).resolve().parents[2]

FIRST_DEBATE = """
import asyncio, gc, json, sys
import django
django.setup()
from channels.layers import get_channel_layer
from django.urls import resolve
from debates import prices
from debates.providers.openai_compat import OpenAICompatibleClient

start = sys.argv[1]
if start == "web":
    import agora.asgi  # what daphne imports
elif start == "warm_up":
    from debates.warm import warm_up
    warm_up()  # what agora_worker calls

from django.template import base as template_base
from django.template.loader import get_template

compiled = []  # templates compiled from here on (a warm process has them in its cached loader)
compile_nodelist = template_base.Template.compile_nodelist
def counted(self):
    compiled.append(self.origin.template_name)
    return compile_nodelist(self)
template_base.Template.compile_nodelist = counted

before = set(sys.modules)
walked, frozen = len(gc.get_objects()), gc.get_freeze_count()

async def first_debate():
    client = OpenAICompatibleClient(sys.argv[2], "test-key", "fake-model", max_retries=0)
    text = "".join([delta async for delta in client.stream([{"role": "user", "content": "hi"}])])
    layer = get_channel_layer()
    name = await layer.new_channel()
    await layer.group_add("warm-up-test", name)
    await layer.group_send("warm-up-test", {"type": "frame", "html": text})
    received = await layer.receive(name)
    await layer.group_discard("warm-up-test", name)
    await asyncio.to_thread(prices.from_table, "gpt-4o-mini")
    await asyncio.to_thread(resolve, "/")  # a first page view imports every view module
    for name in ("debates/new.html", "debates/live.html", "debates/_live.html"):  # a page load, a frame
        await asyncio.to_thread(get_template, name)
    return received["html"]

text = asyncio.run(first_debate())
imported = sorted(set(sys.modules) - before)
print(json.dumps({"text": text, "imported": imported, "walked": walked, "frozen": frozen, "compiled": compiled}))
"""


def first_debate(start: str, base_url: str, **env: str) -> dict:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "agora.settings"}
    environment.pop("REDIS_URL", None)  # the case says which channel layer
    environment.update(env)
    done = subprocess.run(
        [sys.executable, "-c", FIRST_DEBATE, start, base_url],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


CHANNEL_LAYERS = [
    pytest.param({}, id="in-memory layer"),
    pytest.param({"REDIS_URL": REDIS}, id="redis layer", marks=pytest.mark.skipif(not redis_ok(), reason="no Redis")),
]


@pytest.mark.parametrize("env", CHANNEL_LAYERS)
def test_a_started_process_loads_nothing_during_its_first_debate(fake_llm, env):
    cold = first_debate("cold", fake_llm.base_url, **env)
    # The check can see the problem: a process that skipped the warm-up imports on first use.
    # (The HTTP client's package is imported with the provider module; its socket backend is not.)
    assert {"anyio._backends._asyncio", "genai_prices"} <= set(cold["imported"]), cold["imported"]
    if env:
        assert "redis.asyncio.connection" in cold["imported"], cold["imported"]
    assert cold["frozen"] == 0 and cold["walked"] > 100_000, cold
    assert {"debates/live.html", "debates/_live.html"} <= set(cold["compiled"]), cold["compiled"]

    for start in ("web", "warm_up"):
        warm = first_debate(start, fake_llm.base_url, **env)
        assert warm["text"] == cold["text"] and warm["text"], "the reply streamed"
        assert warm["imported"] == [], f"{start}: imported during the first debate: {warm['imported']}"
        assert warm["compiled"] == [], f"{start}: compiled during the first page load: {warm['compiled']}"
        # What start-up loaded is out of the collector's walks: only what came after is in them.
        assert warm["frozen"] > 100_000 and warm["walked"] < warm["frozen"] / 50, warm
