"""A person's turn as the live page's composer posts it: each asked-for part checked against its
limit, then written as the labelled lines a model would have written. A turn without parts is one
free text, within the format's limit for a speech (`awaiting["chars"]`), else FREE_TEXT_LIMIT:
nothing longer is stored."""

from __future__ import annotations

from django.utils.translation import gettext as _

from agora.text import strip_invisible

# A free-text turn whose format names no limit (the most a moderated debate may set per speech).
FREE_TEXT_LIMIT = 4000


def free_text_limit(awaiting: dict) -> int:
    """The format's limit for the speech (moderated: its `max_chars`), else FREE_TEXT_LIMIT."""
    return int(awaiting.get("chars") or 0) or FREE_TEXT_LIMIT


def compose(awaiting: dict, posted) -> tuple[str, dict[int, str]]:
    """(the turn's text, errors by part number). `posted` holds `part-N` (text, or a choice) and
    `reason-N` (the half-sentence after a choice) for each part N of `awaiting["parts"]`."""
    lines, errors = [], {}
    for n, part in enumerate(awaiting.get("parts") or []):
        label = part["label"]
        value = strip_invisible(posted.get(f"part-{n}", "")).replace("\r\n", "\n").strip()
        if part.get("choices"):
            if value not in part["choices"]:
                errors[n] = _("Choose one of %(choices)s.") % {"choices": "、".join(part["choices"])}
                continue
            reason = strip_invisible(posted.get(f"reason-{n}", "")).strip()
            if len(reason) > part.get("tail", 0):
                errors[n] = _("The reason is at most %(count)d characters.") % {"count": part.get("tail", 0)}
                continue
            value = f"{value}，{reason}" if reason else value
        elif not value:
            errors[n] = _("Write something here.")
            continue
        elif part.get("chars") and len(value) > part["chars"]:
            errors[n] = _("%(count)d characters; at most %(max)d.") % {"count": len(value), "max": part["chars"]}
            continue
        lines.append(f"{label}：{value}")
    if not awaiting.get("parts"):  # a turn without named parts: one free text, within its limit
        value = strip_invisible(posted.get("part-0", "")).replace("\r\n", "\n").strip()
        limit = free_text_limit(awaiting)
        if not value:
            errors[0] = _("Write your turn first.")
        elif len(value) > limit:
            errors[0] = _("%(count)d characters; at most %(max)d.") % {"count": len(value), "max": limit}
        lines.append(value)
    return "\n".join(lines), errors


def fields(awaiting: dict, posted=None, errors: dict[int, str] | None = None) -> list[dict]:
    """The composer's fields: each part with its name, limit, what was written and its error."""
    posted, errors = posted or {}, errors or {}
    return [
        {
            **part,
            "n": n,
            "value": posted.get(f"part-{n}", ""),
            "reason": posted.get(f"reason-{n}", ""),
            "error": errors.get(n, ""),
            "rows": max(2, min(8, part.get("chars", 0) // 60)) if part.get("lines", 1) > 1 else 2,
        }
        for n, part in enumerate(
            awaiting.get("parts") or [{"label": "", "chars": free_text_limit(awaiting), "lines": 8}]
        )
    ]
