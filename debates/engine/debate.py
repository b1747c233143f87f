"""Run one debate: bring the clients up, hand the context to the format, report the outcome."""

from __future__ import annotations

import asyncio

from debates.engine import events as ev
from debates.engine import registry
from debates.engine.budget import Ledger
from debates.engine.context import DebateContext
from debates.engine.i18n import gettext_noop, text
from debates.engine.spec import DebateSpec
from debates.engine.turns import AwaitingHuman, CapReached, ClientPool, DebateAborted, TurnPlan
from debates.providers.base import ProviderError


async def run_debate(
    spec: DebateSpec, clients: ClientPool, sink: ev.Sink, ledger: Ledger | None = None, research=None
) -> str:
    """Run `spec` to its end; `research` is a search client (`debates.search`) or None."""
    fmt = registry.get(spec.format)
    if not isinstance(spec.options, fmt.Options):  # e.g. the bare CommonOptions default
        spec.options = fmt.Options.from_dict(spec.options.as_dict())
    ctx = DebateContext(spec, fmt, clients, sink, ledger, research)
    ctx.ledger.money_cap = spec.options.money_budget
    try:
        await _prepare(ctx)
        await ctx.emit(ev.Status("running"))
        outcome = await fmt.run(ctx) or "done"
    except CapReached as stop:  # a budget spent, in a format that has no cap of its own to handle
        ledger = ctx.ledger
        if ledger.money_cap is not None and ledger.money >= ledger.money_cap:
            code, reason = (
                "money_budget",
                text(
                    gettext_noop(
                        "The money budget of $%(budget)s was spent before %(turn)s: the debate stopped there."
                    ),
                    budget=f"{ledger.money_cap:g}",
                    turn=stop.label,
                ),
            )
        else:  # the token cap had no room left for a turn the format must run (its verdict)
            code, reason = (
                "token_cap",
                text(
                    gettext_noop("The token cap of %(cap)d had no room left for %(turn)s: the debate stopped there."),
                    cap=ledger.cap or 0,
                    turn=stop.label,
                ),
            )
        await ctx.warn(code, reason.msgid, **reason.params)
        await ctx.emit(ev.Status("stopped", reason))
        await ctx.emit(ev.Finished("stopped", str(reason)))
        return "stopped"
    except AwaitingHuman as waiting:
        await ctx.emit(human_turn(waiting.plan))
        await ctx.emit(ev.Status("waiting"))
        await ctx.emit(ev.Finished("waiting"))
        return "waiting"
    except DebateAborted as aborted:
        await ctx.emit(ev.Status(aborted.outcome, aborted.text))
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


def human_turn(plan: TurnPlan) -> ev.AwaitingHuman:
    """What a person's composer needs: the parts to write, each with its limit, and the task."""
    parts = [
        {
            "label": p.label,
            "chars": 0 if p.choices else p.chars + len(p.lead),  # a person writes the lead themselves
            "lines": p.lines,
            "choices": list(p.choices),
            "tail": p.tail,  # after a choice: a half-sentence of reason
        }
        for p in (plan.form.parts if plan.form else ())
    ]
    prompt = plan.messages[-1]["content"] if plan.messages else ""
    return ev.AwaitingHuman(
        plan.key,
        plan.round,
        plan.phase,
        plan.speaker.slug,
        plan.speaker.name,
        parts,
        prompt,
        chars=plan.chars,
        speaker_name_en=plan.speaker.name_en,
    )
