"""What a followed debate says to a chat client, event by event (`debates.api.changes`): the
debate itself as reasoning (speaker headings and speeches, as it happens; clients show it as
collapsible thinking), and the report's verdict as the answer, with the debate's page at the end.
Pure: the views frame these pieces as chunks or as one completion."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

REASONING, CONTENT = "reasoning_content", "content"


@dataclass
class Reply:
    verdict: str = ""
    status: str = ""
    reasoning: list[str] = field(default_factory=list)  # everything said as reasoning, in order

    def on(self, event: str, data: dict) -> list[tuple[str, str]]:
        """The pieces (kind, text) one event adds. Call inside the debate's language."""
        pieces: list[str] = []
        if event == "turn":
            name = data.get("speaker_name") or data.get("speaker") or ""
            heading = _("Round %(n)d · %(name)s") % {"n": data["round"], "name": name} if data.get("round") else name
            if data.get("attempt", 1) > 1:
                heading = _("%(heading)s (attempt %(n)d)") % {"heading": heading, "n": data["attempt"]}
            pieces.append(("\n\n" if self.reasoning else "") + f"### {heading}\n\n")
        elif event == "delta":
            pieces.append(data["text"])
        elif event == "replace":
            # Text already sent cannot be taken back: the turn's final words follow, marked.
            pieces.append("\n\n*" + _("The turn as it was kept:") + "*\n\n" + data["text"])
        elif event == "turn_done" and data.get("error"):
            pieces.append("\n\n> ⚠ " + data["error"].replace("\n", " "))
        elif event == "report":
            self.verdict = data.get("verdict_markdown") or ""
        elif event == "end":
            self.status = data.get("status", "")
        self.reasoning.extend(pieces)
        return [(REASONING, p) for p in pieces if p]

    def answer(self, *, status: str, detail: str, url: str) -> str:
        """The answer: the verdict, or why there is none; then the page with everything."""
        body = self.verdict.strip()
        if status != "done" or not body:
            reason = detail or status
            body = (body + "\n\n" if body else "") + _("The debate ended without a report: %(reason)s") % {
                "reason": reason
            }
        return body + "\n\n" + _("The whole debate, its report and exports: %(url)s") % {"url": url}
