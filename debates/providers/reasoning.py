"""Reasoning models: which models think before they answer, and what their requests look like.

A reasoning model spends part of its completion tokens on thinking that is not the answer. The
families are known by the model's name (`is_reasoning_model`); a server's 400 teaches the rest
(`debates.providers.openai_compat`). No Django imports.

Two request shapes:
  OpenAI's reasoning models (o1, o3, o4-mini, gpt-5...) refuse `max_tokens` ("use
  `max_completion_tokens`"), any `temperature`/`top_p` but the default and `stop`, and take a
  `reasoning_effort`.
  The other reasoning families (deepseek-reasoner, QwQ, R1 distills, *-thinking) are served by
  servers that document `max_tokens` (DeepSeek, vLLM, llama.cpp, Ollama); they keep it, and keep
  their temperature, but get no `stop`: a stop sequence could match inside the thinking and end
  the reply before its answer.
Both count the thinking in the token limit, so a reasoning turn is sent `with_headroom(allowance)`.
"""

from __future__ import annotations

import re

EFFORTS = ("low", "medium", "high")

# Thinking shares the completion limit with the answer: a reasoning turn may use this many times
# its visible allowance, plus a constant, before the server stops it. The visible answer is still
# held to its own ceiling by the engine (`debates.engine.turns.reply_ceiling`), which counts only
# answer text.
HEADROOM_FACTOR = 4
HEADROOM_TOKENS = 2048

# The last part of a model id: "openai/o3-mini" (OpenRouter), "o3-mini", "deepseek-r1:14b" (Ollama).
_OPENAI_REASONING = re.compile(r"(o1|o3|o4)([-.:_].*)?|gpt-5(?!-chat)([-.:_].*)?")
_OTHER_REASONING = re.compile(
    r"deepseek-reasoner.*|qwq([-.:_].*)?|.*[-_.:]thinking([-.:_].*)?|(.*[^a-z0-9])?r1([^a-z0-9].*)?"
)


def _base(model_id: str) -> str:
    return (model_id or "").strip().lower().rsplit("/", 1)[-1]


def is_openai_reasoning(model_id: str) -> bool:
    """OpenAI's reasoning models by name (o1, o3, o4-mini, gpt-5, gpt-5-mini..., not gpt-5-chat):
    `max_completion_tokens`, no temperature, top_p or stop, and a `reasoning_effort`."""
    return bool(_OPENAI_REASONING.fullmatch(_base(model_id)))


def is_reasoning_model(model_id: str) -> bool:
    """Whether the model thinks before it answers, known by its name: o1/o3/o4*, gpt-5*,
    deepseek-reasoner, qwq*, *-thinking*, *r1* (R1 as a word: deepseek-r1:14b, DeepSeek-R1-0528)."""
    base = _base(model_id)
    return bool(_OPENAI_REASONING.fullmatch(base) or _OTHER_REASONING.fullmatch(base))


def with_headroom(allowance: int) -> int:
    """The completion limit of a reasoning turn whose answer may use `allowance` tokens."""
    return HEADROOM_FACTOR * allowance + HEADROOM_TOKENS
