"""One turn builder for every format: a `TurnPlan` from who speaks, the turn's key and rules, what
it may see and the output it must give. The topic, the known facts, the user's context, the
persona's domain bridge, the seat's LLM client, `max_tokens` by kind and the stop strings are
filled in here, the same way for every format."""

from __future__ import annotations

from debates.engine.context import DebateContext
from debates.engine.i18n import say
from debates.engine.prompts import TaskDecorator, compose, domain_bridge, stop_before
from debates.engine.spec import PersonaSpec
from debates.engine.structure import Form
from debates.engine.turns import PostProcess, TurnPlan

HOST_RULE = {
    "zh": "你只有程序权与记录权，没有裁决权；不下场辩论，不替任何一方说话。",
    "en": "You hold only procedure and the record, no power to decide: you do not debate and speak for no side.",
}


def plan(
    ctx: DebateContext,
    speaker: PersonaSpec,
    key: str,
    *,
    round_no: int,
    phase: str,
    rules: list[str],
    material: str = "",
    output: str = "",
    kind: str = "speech",
    postprocess: PostProcess | None = None,
    others: list[str] = (),
    stop: list[str] | None = None,
    duty: str = "",
    exempt: bool = False,
    max_tokens: int | None = None,
    form: Form | None = None,
    chars: int = 0,
    cut_at: int = 0,
) -> TurnPlan:
    """A speech (or any turn): `others` are the names of the other speakers, whose lines a small
    model might start writing (the turn stops there); `stop` replaces the default stop strings.
    `chars`, for a turn without a form, is the speech's limit (a person writing it keeps to it);
    `cut_at`, a limit the format cuts the speech at, past which the reply is no longer read.
    `form`, the labelled parts `output` asks for, is sent as a grammar to a client that takes one
    (the local model), so its reply has them all, in order and within the turn's budget."""
    override = ctx.spec.overrides.get(key, {})  # a turn regenerated with another model or instruction
    if override.get("instruction"):
        said = override["instruction"]
        rules = [*rules, say(ctx.lang, f"重写要求（用户给出）：{said}", f"Rewrite as the user asks: {said}")]
    decorator = TaskDecorator(
        topic=ctx.spec.question,
        facts=ctx.facts_for(round_no),
        user_context=ctx.options.user_context,
        domain_bridge=domain_bridge(speaker, ctx.lang) if speaker.kind == "debater" else "",
        rules=list(rules),
        lang=ctx.lang,
        floor=list(ctx.floor),
    )
    budget = max_tokens or ctx.max_tokens(kind)
    client = override.get("client") or ctx.seat_client(speaker.slug)
    # The form as the grammar bounds it (the parts fitted to the budget): sent, then read back.
    fitted = form.fit(budget) if form is not None and ctx.client_for(client).supports_grammar else None

    return TurnPlan(
        key=key,
        round=round_no,
        phase=phase,
        speaker=speaker,
        messages=compose(speaker, decorator, material=material, output_format=output, duty=duty),
        max_tokens=budget,
        summary_limit=ctx.format.summary_limit,
        stop=stop if stop is not None else stop_before(list(others), ctx.lang),
        client=client,
        postprocess=_tidied(form, postprocess, fitted) if form is not None else postprocess,
        exempt_from_cap=exempt,
        reserved=kind == "verdict",
        extra={"grammar": fitted.grammar()} if fitted is not None else None,
        form=form,
        chars=chars,
        cut_at=cut_at,
    )


def _tidied(form: Form, postprocess: PostProcess | None, fitted: Form | None = None) -> PostProcess:
    """The format's own postprocessing, on the reply with what its parts copied of the form cut,
    and, written under a grammar (`fitted`, the form as the grammar bounded it), with the parts it
    stopped at their length ended as cuts. The form's labels go with the turn's data (`parts`):
    pages and exports show the text without them where they only repeat the grammar
    (`reading.shown_speech`)."""

    def run(raw: str) -> tuple[str, dict]:
        text = form.tidy(fitted.mark_cuts(raw) if fitted is not None else raw)
        text, data = postprocess(text) if postprocess else (text, {})
        return text, {**data, "parts": form.labels()}

    return run


def host_plan(
    ctx: DebateContext,
    host: PersonaSpec,
    key: str,
    *,
    task: str,
    round_no: int,
    material: str = "",
    output: str = "",
    kind: str = "host",
    exempt: bool = False,
    max_tokens: int | None = None,
    phase: str = "host",
    form: Form | None = None,
) -> TurnPlan:
    """A turn of the host or moderator: procedure and record only, in neutral language."""
    return plan(
        ctx,
        host,
        key,
        round_no=round_no,
        phase=phase,
        rules=[task, HOST_RULE[ctx.lang]],
        material=material,
        output=output,
        kind=kind,
        duty=say(ctx.lang, "你是主持人，语言中性。", "You are the host; your language is neutral."),
        exempt=exempt,
        max_tokens=max_tokens,
        form=form,
    )
