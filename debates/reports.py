"""A finished debate's report as a reader sees it: its Markdown rendered in the reader's language
(headings, notes, warnings) from the report's data; the debate's own words stay as spoken."""

from django.utils.translation import gettext

from debates.engine.report import render_transcript, render_verdict


def _has_sections(report) -> bool:
    return bool(report and isinstance(report.data, dict) and "sections" in report.data)


def verdict_markdown(report, *, warnings: bool = True) -> str:
    """The report's verdict in the viewer's language (its headings and notes; the debate's own
    words stay as spoken). Reports from before sections were data keep their stored Markdown.
    Pages list the warnings themselves (`warnings=False`); files carry them."""
    if not _has_sections(report):
        return report.verdict_markdown if report else ""
    return render_verdict(report.debate.question, report.data, gettext, warnings=warnings)


def transcript_markdown(report, turns, *, ledger: bool = True) -> str:
    if not _has_sections(report):
        return report.transcript_markdown if report else ""
    rows = report_turns(report, turns)
    return render_transcript(report.debate.question, report.data, rows, gettext, ledger=ledger)


def report_turns(report, turns) -> list[dict]:
    """The report's turns (in its order) with their text, from the debate's rows; a regenerated
    or retried turn carries its earlier attempts (every attempt is in the exports)."""
    rows = {t.key: t for t in turns if not isinstance(t, dict)}
    out = []
    for t in report.data.get("turns", []):
        row = rows.get(t["key"])
        earlier = [h for h in (row.history if row else []) if h.get("text")]
        out.append({**t, "text": row.text if row else "", "earlier": [h["text"] for h in earlier]})
    return out
