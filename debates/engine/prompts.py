"""Prompt composition: persona text (who) + task decorator (this debate, this round).

The persona never holds anything about the question (the purity rule); everything about the task
arrives here, per turn, and exists only in the prompt and the debate's record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from debates.engine.spec import PersonaSpec
from debates.providers.base import Message

LANGUAGE_RULE = "用提问所用的语言作答（问题是中文就用中文）。Answer in the language of the question."


@dataclass
class TaskDecorator:
    """The four parts of the seed's task decorator, rendered into the turn's user message."""

    topic: str
    facts: str = ""
    user_context: str = ""
    domain_bridge: str = ""
    rules: list[str] = field(default_factory=list)

    def render(self) -> str:
        parts = [f"## 议题 Question\n{self.topic}"]
        if self.facts.strip():
            parts.append(f"## 已知事实与材料 Known facts\n{self.facts.strip()}")
        if self.user_context.strip():
            parts.append(f"## 用户背景 User context\n{self.user_context.strip()}")
        if self.domain_bridge.strip():
            parts.append(f"## 领域适配 Your frame here\n{self.domain_bridge.strip()}")
        if self.rules:
            parts.append("## 本轮规则 Rules of this round\n" + "\n".join(f"- {r}" for r in self.rules))
        return "\n\n".join(parts)


def system_prompt(persona: PersonaSpec, *, duty: str = "") -> str:
    """Who is speaking. `duty` states the speaker's job in this format (e.g. the host's limits)."""
    lines = [f"你是「{persona.name}」。始终以这个人格的视角、知识与风格发言，不扮演任何其他人。"]
    if persona.description:
        lines.append(persona.description)
    if persona.text.strip():
        lines.append(persona.text.strip())
    if duty:
        lines.append(duty)
    lines.append(LANGUAGE_RULE)
    return "\n\n".join(lines)


def compose(
    persona: PersonaSpec,
    decorator: TaskDecorator,
    *,
    material: str = "",
    output_format: str = "",
    duty: str = "",
) -> list[Message]:
    """One fresh call's messages: system = the persona; user = decorator + material + format."""
    user = [decorator.render()]
    if material.strip():
        user.append(material.strip())
    if output_format.strip():
        user.append("## 输出格式 Output format\n" + output_format.strip())
    return [
        {"role": "system", "content": system_prompt(persona, duty=duty)},
        {"role": "user", "content": "\n\n".join(user)},
    ]


def domain_bridge(persona: PersonaSpec) -> str:
    """A one-line lead-in mapping the persona's general frame onto whatever the question is about."""
    focus = "、".join(persona.keywords[:4])
    if focus:
        return f"请把你一贯关注的（{focus}）映射到这个问题所在的领域，从你的框架出发发言。"
    return "请把你一贯的思考框架映射到这个问题所在的领域。"


# A small model sometimes echoes the prompt's own headings after its speech: stop there.
ECHO_STOPS = ("## 输出格式", "## 本轮规则")


def stop_before(names: list[str]) -> list[str]:
    """Stop sequences that end a turn if the model starts writing another speaker's lines or
    echoing the prompt. OpenAI-compatible servers accept at most four stop strings."""
    stops = [f"\n{name}：" for name in names[:2]] + list(ECHO_STOPS)
    return stops[:4]
