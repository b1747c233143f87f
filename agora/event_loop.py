"""The event loop Agora's processes run on: uvloop where it is installed, else asyncio's own.

Every token a viewer sees crosses the loop several times (the model's stream read, the flush,
each viewer's send), and daphne's Twisted reactor asks the loop to watch a socket for writing on
every frame it sends. uvloop does that loop work in C: with 88 debates streaming to three
viewers each on one daphne, the process spent 6–9% less CPU per token in two pairs of runs, and
fewer tokens reached a viewer later than 100 ms (bench/README.md). Nothing else changes: the same asyncio API, the same
Twisted reactor on top.

The loop must be chosen before daphne is imported (it makes its loop at import), so:

  - `python -m agora.web …` is daphne's command line with the loop chosen first (the Procfile,
    the Dockerfile, compose.yaml and `manage.py serve` use it);
  - `manage.py` chooses it for its commands (`runserver`, `agora_worker`, `debate`).

AGORA_EVENT_LOOP=asyncio keeps asyncio's loop (e.g. to rule uvloop out when chasing a bug);
uvloop is not made for Windows, where asyncio's is used.
"""

from __future__ import annotations

import asyncio
import os
import sys

CHOICES = ("uvloop", "asyncio")


def wanted() -> str:
    """The loop AGORA_EVENT_LOOP asks for (uvloop by default)."""
    choice = os.environ.get("AGORA_EVENT_LOOP", "uvloop").strip().lower() or "uvloop"
    if choice not in CHOICES:
        sys.exit(f"AGORA_EVENT_LOOP={choice!r}: say uvloop (the default) or asyncio.")
    return choice


def uvloop_module():
    """uvloop, if it is wanted and installed (not on Windows, nor in an install without the
    locks); else None: asyncio's loop."""
    if wanted() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop


def install() -> str:
    """Make new event loops the chosen kind; returns the kind they will be."""
    uvloop = uvloop_module()
    if uvloop is None:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def kind_of(loop: asyncio.AbstractEventLoop) -> str:
    """ "uvloop" or "asyncio": what `/healthz` says the server runs on."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
