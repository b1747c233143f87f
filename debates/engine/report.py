"""The two outputs every format ends with: a verdict for readers and the full transcript.

Formats fill a `ReportBuilder` with sections; it renders Markdown (sanitised again by the web layer
before display) and a structured dict for the JSON export.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from debates.engine import events as ev
from debates.engine.text import topic_slug

# Phases every format may have; a format's own `phase_titles` add to these.
PHASE_TITLES = {"host": "主持", "speech": "发言"}


def _escape_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_escape_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class ReportBuilder:
    ctx: Any  # DebateContext (not imported: turns imports nothing from here, keep it one-way)
    title: str
    top_notes: list[str] = field(default_factory=list)
    verdict_sections: list[tuple[str, str]] = field(default_factory=list)
    transcript_sections: list[tuple[str, str]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def verdict_markdown(self, heading: str) -> str:
        parts = [f"# {heading}", f"**议题 Question**：{self.title}"]
        parts += self.top_notes
        warnings = [w.text for w in self.ctx.warnings if w.code != "one_sided_coverage"]
        if warnings:
            parts.append("\n".join(f"> {w}" if w.startswith("⚠️") else f"> ⚠️ {w}" for w in warnings))
        for title, body in self.verdict_sections:
            parts.append(f"## {title}\n\n{body.strip()}")
        return "\n\n".join(parts) + "\n"

    def transcript_markdown(self) -> str:
        parts = [f"# 实录 Transcript\n\n**议题 Question**：{self.title}"]
        for title, body in self.transcript_sections:
            parts.append(f"## {title}\n\n{body.strip()}")
        parts.append("## 全部发言 All speeches")
        for result in self.ctx.transcript():
            phase = {**PHASE_TITLES, **self.ctx.format.phase_titles}.get(result.phase, result.phase)
            parts.append(f"### {phase} · {result.speaker.name}\n\n{result.text.strip()}")
        ledger = self.ctx.ledger
        estimated = "（估算 estimated）" if ledger.estimated else ""
        parts.append(
            f"## Token 账本 Ledger\n\n输入 {ledger.prompt_tokens} · 输出 {ledger.completion_tokens} · "
            f"合计 {ledger.total}{estimated}" + (f" · 上限 cap {ledger.cap}" if ledger.cap else "")
        )
        return "\n\n".join(parts) + "\n"

    async def emit(self, verdict_heading: str) -> None:
        data = dict(self.data)
        data.setdefault("topic_slug", topic_slug("", self.title, (self.ctx.spec.format, "debate")))
        data["verdict_sections"] = [{"title": t, "body": b} for t, b in self.verdict_sections]
        data["warnings"] = [{"code": w.code, "text": w.text} for w in self.ctx.warnings]
        data["ledger"] = self.ctx.ledger.as_dict()
        data["turns"] = [
            {
                "key": r.key,
                "round": r.round,
                "phase": r.phase,
                "speaker": r.speaker.slug,
                "summary": r.summary,
                "data": r.data,
            }
            for r in self.ctx.transcript()
        ]
        await self.ctx.emit(ev.Report(self.verdict_markdown(verdict_heading), self.transcript_markdown(), data))
