"""What a debate gives away as files, and how its report reads, for every door: the pages
(`views.export_md`, `views.export_json`, the report page's template tags), the JSON API
(`api/routes.py`) and the terminal (`manage.py debate`), and the doors still to come.

- The report as a reader sees it: its Markdown rendered in the reader's language (headings, notes,
  warnings) from the report's data; the debate's own words stay as spoken (`verdict_markdown`,
  `transcript_markdown`).
- The exports as a user may read them: Markdown (`export_markdown`) and JSON (`export_payload`),
  provider addresses redacted for everyone but staff (`access.shows_internals`). An export is
  wholly in the debate's language (its question's, as its speeches are: headings, labels, notes,
  names), whoever downloads it and in whatever language they read the site (`in_debate_language`).
- Their file names (`archive_name`) and the one `Content-Disposition` every door sends
  (`attachment`).
"""

from __future__ import annotations

from django.utils import timezone, translation
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _

from agora.text import strip_invisible
from debates import audience
from debates.access import can_control, shows_internals
from debates.engine.i18n import language_of
from debates.engine.report import render_transcript, render_verdict
from debates.engine.text import topic_slug
from debates.models import Debate
from debates.options import described, union
from debates.rendering import inert_markdown, redact_urls, strip_invisible_deep
from personas.models import name_in, names_by_language

# -- the report as a reader sees it ----------------------------------------------------------


def _has_sections(report) -> bool:
    return bool(report and isinstance(report.data, dict) and "sections" in report.data)


def verdict_markdown(report, *, warnings: bool = True) -> str:
    """The report's verdict in the viewer's language (its headings and notes; the debate's own
    words stay as spoken). Reports from before sections were data keep their stored Markdown.
    Pages list the warnings themselves (`warnings=False`); files carry them."""
    if not _has_sections(report):
        return report.verdict_markdown if report else ""
    return render_verdict(report.debate.question, report.data, _, warnings=warnings)


def transcript_markdown(report, turns, *, ledger: bool = True, thinking: bool = False) -> str:
    """The transcript as Markdown; a reasoning model's thinking only when asked (`thinking`)."""
    if not _has_sections(report):
        return report.transcript_markdown if report else ""
    rows = report_turns(report, turns, thinking=thinking)
    return render_transcript(report.debate.question, report.data, rows, _, ledger=ledger)


def report_turns(report, turns, *, thinking: bool = False) -> list[dict]:
    """The report's turns (in its order) with their text, from the debate's rows; a regenerated
    or retried turn carries its earlier attempts (every attempt is in the exports), and with
    `thinking` its model's thinking."""
    rows = {t.key: t for t in turns if not isinstance(t, dict)}
    out = []
    for t in report.data.get("turns", []):
        row = rows.get(t["key"])
        earlier = [h for h in (row.history if row else []) if h.get("text")]
        extra = {"thinking": row.thinking} if thinking and row and row.thinking else {}
        # The speaker as this reader (or this export's language) calls them.
        name = strip_invisible(name_in(None, t.get("speaker_name", ""), t.get("speaker_name_en", "")))
        out.append(
            {
                **t,
                "speaker_name": name,
                "text": row.text if row else "",
                "earlier": [h["text"] for h in earlier],
                **extra,
            }
        )
    return out


def debate_language(debate: Debate) -> str:
    """The site's language code for the language `debate` is held in (its question's)."""
    return "en" if language_of(debate.question) == "en" else "zh-hans"


def in_debate_language(debate: Debate):
    """A context in which gettext and names speak `debate`'s language: the exports' rule."""
    return translation.override(debate_language(debate))


# -- the exports ---------------------------------------------------------------------------------


def archive_name(debate: Debate, ext: str, kind: str = "debate") -> str:
    """`<topic-slug>-<format>-<kind>-<date>-<id>.<ext>`: readable (Chinese questions are romanised
    into the slug) and unique (the debate's id)."""
    slug = debate.topic_slug or topic_slug("", debate.question, ("debate",))
    day = (debate.finished_at or debate.created_at or timezone.now()).date().isoformat()
    return f"{slug}-{debate.format}-{kind}-{day}-{debate.pk}.{ext}"


def attachment(response, debate: Debate, ext: str, kind: str = "debate"):
    """`response` as a download named `archive_name(debate, ext, kind)` (one header for every door)."""
    response["Content-Disposition"] = content_disposition_header(True, archive_name(debate, ext, kind))
    return response


EXPORT_PARTS = ("report", "transcript")


def export_markdown(debate: Debate, user, part: str = "both", *, thinking: bool = False) -> str | None:
    """The Markdown export as `user` may read it (None: no report yet); the API's as well. The
    models' thinking is left out unless asked (`thinking`, `?thinking=1`)."""
    rep = getattr(debate, "report", None) if hasattr(debate, "report") else None
    if rep is None:
        return None
    turns = list(debate.turns.all())
    with in_debate_language(debate):
        verdict, transcript = verdict_markdown(rep), transcript_markdown(rep, turns, thinking=thinking)
        pieces = {"report": [verdict], "transcript": [transcript]}
        if part != "transcript":
            pieces["report"].append(audience_markdown(debate))
        body = inert_markdown(
            "\n\n---\n\n".join(p for p in pieces.get(part) or pieces["report"] + pieces["transcript"] if p)
        )
        if not shows_internals(user):
            body = redact_urls(body, _("the provider"))
    return body


def audience_markdown(debate: Debate) -> str:
    """The room's vote before and after, and the swing per side (#30); "" without votes."""
    drawn = audience.export(debate)
    if drawn is None:
        return ""
    lines = [
        f"## {_('The room’s vote')}",
        "",
        f"| {_('Side')} | {_('Before')} | {_('After')} | {_('Swing')} |",
        "|---|---|---|---|",
    ]

    def shown(n, percent):
        return f"{n}" + (f" ({percent}%)" if percent is not None else "")

    for side in drawn["sides"]:
        swing = f"{side['swing']:+d}" if side["swing"] is not None else "–"
        lines.append(
            f"| {side['label']} | {shown(side['before'], side['before_percent'])} | "
            f"{shown(side['after'], side['after_percent'])} | {swing} |"
        )
    if drawn["questions_taken"]:
        lines += ["", f"**{_('From the floor')}**", ""] + [f"- {q}" for q in drawn["questions_taken"]]
    return "\n".join(lines)


def export_payload(debate: Debate, user) -> dict:
    """The JSON export as `user` may read it; the API's as well. Its names are the debate's
    language's (`name`, `speaker_name`), each beside its names in every language (`names`,
    `speaker_names`)."""
    with in_debate_language(debate):
        return _payload(debate, user)


def _from_the_caller() -> set[str]:
    """The options the OpenAI door fills from the caller's chat (its system message, the turns
    before the question), as each option declares (`from_chat`)."""
    return {name for name in union() if described(name).from_chat}


def _payload(debate: Debate, user) -> dict:
    rep = getattr(debate, "report", None) if hasattr(debate, "report") else None
    # The caller's own words (a chat's system message and history, or "About you" and the material
    # typed on the form) and the prompts that carry them are the owner's: a share-link visitor or
    # anyone else who may only read the debate gets the debate without them.
    private = not can_control(user, debate)
    payload = {
        "id": debate.pk,
        "question": debate.question,
        "format": debate.format,
        "status": debate.status,
        "status_detail": debate.status_detail,
        "options": {k: v for k, v in debate.options.items() if k not in _from_the_caller()}
        if private
        else debate.options,
        "topic_slug": debate.topic_slug,
        "warnings": debate.warnings,
        "created_at": debate.created_at.isoformat(),
        "finished_at": debate.finished_at.isoformat() if debate.finished_at else None,
        "tokens": debate.usage(),
        "seats": [
            {
                "persona": s.persona.slug,
                "name": s.persona.called(),
                "names": names_by_language(s.persona.name, s.persona.name_en),
                "position": s.position,
                "model": s.model,
            }
            for s in debate.seats.select_related("persona")
        ],
        "turns": [
            {
                "key": t.key,
                "round": t.round,
                "phase": t.phase,
                "speaker": t.speaker_slug,
                "speaker_name": t.speaker_in(),
                "speaker_names": names_by_language(t.speaker_name, t.speaker_name_en),
                "state": t.state,
                "text": t.text,
                "thinking": t.thinking,  # a reasoning model's thinking, never part of the text
                "summary": t.summary,
                "error": t.error,
                "prompt_tokens": t.prompt_tokens,
                "completion_tokens": t.completion_tokens,
                "reasoning_tokens": t.reasoning_tokens,
                "usage_estimated": t.usage_estimated,
                "cost_usd": t.cost,
                "model": t.model,
                "messages": [] if private else t.messages,
                "data": t.data,
                "history": t.history,
            }
            for t in debate.turns.all()
        ],
        "report": {
            "verdict_markdown": rep.verdict_markdown,
            "transcript_markdown": rep.transcript_markdown,
            "data": rep.data,
        }
        if rep
        else None,
        "audience": audience.export(debate),  # the room's votes and the questions taken (#30)
    }
    payload = strip_invisible_deep(payload)
    if not shows_internals(user):
        payload = _without_addresses(payload, _("the provider"))
    return payload


def _without_addresses(value, replacement: str):
    """Errors (turns, their earlier attempts, the status detail) without the provider's URL."""
    if isinstance(value, dict):
        return {
            k: redact_urls(v, replacement)
            if k in ("error", "status_detail") and isinstance(v, str)
            else _without_addresses(v, replacement)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_addresses(v, replacement) for v in value]
    return value
