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
    """The report's turns (in its order) with their text, from the debate's rows."""
    texts = {t.key: t.text for t in turns if not isinstance(t, dict)}
    return [{**t, "text": texts.get(t["key"], "")} for t in report.data.get("turns", [])]
