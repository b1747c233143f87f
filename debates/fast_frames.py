"""The live fragments sent for every debate every frame interval (a text delta, a thinking delta
and the token meter), built as strings instead of through the template engine.

At 100 debates that is 2,500 fragments a second; the template engine's cost per render (context
stack, node walk, partial lookup) was most of the frame's cost. Every other fragment renders from
`debates/_live.html`. These must stay identical to their partials there (`delta`, `thinking_delta`,
`meter`): tests/scale/test_fast_frames.py renders both ways for arbitrary input and compares them.
"""

from __future__ import annotations

from functools import cache

from django.utils import translation
from django.utils.formats import localize
from django.utils.html import conditional_escape, escape

from agora.text import strip_invisible
from debates.templatetags.agora import money


def delta(turn_pk: int, text: str) -> str:
    """`text` appended to the turn's live text (the `delta` partial)."""
    return f'<div hx-swap-oob="beforeend:#turn-{turn_pk}-text">{escape(strip_invisible(text))}</div>'


def thinking(turn_pk: int, text: str) -> str:
    """`text` appended to the turn's live thinking (the `thinking_delta` partial)."""
    return f'<div hx-swap-oob="beforeend:#turn-{turn_pk}-thinking">{escape(strip_invisible(text))}</div>'


@cache
def _labels(language: str) -> tuple[str, str, str, str, str]:
    with translation.override(language):
        return tuple(
            conditional_escape(translation.gettext(msgid))
            for msgid in (
                "Tokens",
                "partly estimated",
                "Cost in US dollars",
                "Tokens used of the cap",
                "of which thinking: %(n)s",
            )
        )


def meter(debate, streaming_tokens: int, language: str, streaming_thinking: int = 0) -> str:
    """The token and money meter, swapped out of band (the `meter` partial with `oob`);
    `streaming_thinking` of `streaming_tokens` are the running turns' thinking."""
    tokens, estimated, cost_title, cap_label, of_which = _labels(language)
    used = localize(debate.total_tokens + streaming_tokens)
    thought = debate.reasoning_tokens + streaming_thinking
    cap = debate.token_cap
    parts = [
        f'\n<div id="debate-meter" class="meter" hx-swap-oob="true">\n  <span>{tokens}: <strong>{used}</strong>',
        f'<span class="est" title="{estimated}"> ≈</span>' if debate.tokens_estimated or streaming_tokens else "",
        f' <span class="thinking-tokens">({of_which % {"n": localize(thought)}})</span>' if thought else "",
        f" / {localize(cap)}" if cap else "",
        f' · <span class="money" title="{cost_title}">{conditional_escape(money(debate))}</span>',
    ]
    budget = (debate.options or {}).get("money_budget")
    if budget:
        parts.append(f" / ${conditional_escape(localize(budget))}")
    parts.append("</span>\n  ")
    if cap:
        parts.append(f'<meter min="0" max="{localize(cap)}" value="{used}" aria-label="{cap_label}"></meter>')
    parts.append("\n</div>\n")
    return "".join(parts)
