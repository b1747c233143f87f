"""Load at start-up what a process would otherwise load during its first debate.

Measured on a fresh worker (bench/README.md, "Cold start"): its first debates' streams all stalled
for 220–280 ms, once, mid-turn. Python's audit hook showed why: the event loop that streams every
debate imported the openai SDK's HTTP stack (httpcore2, h11, h2, anyio's streams) on the first
request and the Redis client with channels-redis on the first frame, and the database thread that
writes every debate's text imported the price table (genai-prices: 0.25 s, then its data on the
first lookup). Paid here instead: by the web process (`agora/asgi.py`) and each worker
(`manage.py agora_worker`) before they serve anything; not by other management commands, which
never stream to viewers (a test process that imports `agora.asgi` pays it once).

Templates too: compiled on first use, a fresh web process's first live page took 79–93 ms against
47–54 ms with every template of ours compiled here (and its template tag libraries imported),
measured on an idle daphne against the fake model, two runs each.

Then the garbage collector: a fresh process holds some 400,000 objects that live as long as it
does, and each of Python's full collections walked them all, 190–225 ms on 2 cores, stopping every
thread (measured with `gc.callbacks` in the web process and a worker mid-debate). Frozen after the
warm-up, they are left out of every later collection (`gc.freeze`), which then walks only what
came after.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
from pathlib import Path


def warm_up() -> None:
    from channels.layers import get_channel_layer
    from django.urls import get_resolver

    from debates import prices
    from debates.engine import optional
    from debates.providers import openai_compat

    get_channel_layer()  # builds the configured backend: the Redis client and its serializer
    openai_compat.load_http_stack()
    # The SDK's transport imports anyio's event-loop backend on its first connection, and that the
    # rest of what a connection uses. A private module: a newer anyio may move it.
    with contextlib.suppress(ImportError):
        importlib.import_module("anyio._backends._asyncio")
    prices.from_table("gpt-4o-mini")  # the first lookup reads the table's data
    # Research's page reader (0.2 s), imported where it is used so that without it only research
    # suffers (debates.engine.optional); it says so there, and `manage.py check` names it.
    with contextlib.suppress(ImportError):
        optional.load("trafilatura")
    importlib.import_module("pypinyin")  # an export's file name romanises a Chinese question
    get_resolver().url_patterns  # noqa: B018 - every view module, which a first request would import
    compile_templates()

    gc.collect()  # the start-up's garbage is freed, not frozen
    gc.freeze()


def compile_templates() -> None:
    """Compile every template of ours into the cached loader (~70 ms for all of them on this
    machine): a fresh process otherwise compiles a page's templates on its first load, and a
    worker the frames' templates on its first debate, with the interpreter held meanwhile."""
    from django.conf import settings
    from django.template.loader import get_template

    for folder in settings.TEMPLATES[0]["DIRS"]:
        root = Path(folder)
        for path in sorted(root.rglob("*.html")):
            get_template(path.relative_to(root).as_posix())
