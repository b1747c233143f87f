"""The debate engine: plain async code, no Django.

    outcome = await run_debate(spec, ClientPool(client), sink)

takes a `DebateSpec`, LLM clients and an event sink; emits `events` in order and returns the
outcome: "done", "waiting" (the roundtable checkpoint), "failed" or "refused".
"""

from __future__ import annotations

import asyncio

from debates.engine import duel, moderated, panel, roundtable
from debates.engine import events as ev
from debates.engine.budget import Ledger
from debates.engine.spec import DebateSpec
from debates.engine.turns import ClientPool, DebateAborted, DebateContext
from debates.providers.base import ProviderError

RUNNERS = {"duel": duel.run, "panel": panel.run, "roundtable": roundtable.run, "moderated": moderated.run}


async def run_debate(spec: DebateSpec, clients: ClientPool, sink: ev.Sink, ledger: Ledger | None = None) -> str:
    ctx = DebateContext(spec, clients, sink, ledger)
    try:
        await _prepare(ctx)
        await ctx.emit(ev.Status("running"))
        outcome = await RUNNERS[spec.format](ctx) or "done"
    except DebateAborted as aborted:
        await ctx.emit(ev.Status(aborted.outcome, str(aborted)))
        await ctx.emit(ev.Finished(aborted.outcome, str(aborted)))
        return aborted.outcome
    except asyncio.CancelledError:
        await ctx.emit(ev.Status("stopped"))
        raise
    await ctx.emit(ev.Status(outcome))
    await ctx.emit(ev.Finished(outcome))
    return outcome


async def _prepare(ctx: DebateContext) -> None:
    """Bring every client up (the local model may need to load) and say so while it happens.
    A provider that cannot start fails the debate with its own words (what to fix)."""

    async def on_status(text: str) -> None:
        await ctx.emit(ev.Status("loading_model", text))

    for client in ctx.clients.all():
        try:
            await client.ensure_ready(on_status)
        except ProviderError as error:
            raise DebateAborted(str(error)) from error


__all__ = ["ClientPool", "DebateSpec", "Ledger", "run_debate"]
