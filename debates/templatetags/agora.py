from django import template
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.translation import gettext

from agora.text import strip_invisible
from debates import exports
from debates.engine.i18n import Text, for_reader
from debates.rendering import redact_urls, render_markdown, with_icons
from personas.models import is_english, name_in

register = template.Library()


@register.filter
def markdown(text, top=1):
    """Sanitised Markdown (see debates.rendering); `top`: the level of its first headings."""
    return render_markdown(text, int(top))


@register.filter
def fields_with_errors(form) -> int:
    """How many of a bound form's fields have an error (its non-field errors not counted)."""
    return len([name for name in getattr(form, "errors", {}) if name != NON_FIELD_ERRORS])


@register.filter
def icons(text):
    """Text whose icon symbols (⛔, ⚠️) are drawn as CSS shapes with a text alternative."""
    return with_icons(text)


@register.filter
def called(who):
    """A name in the reader's language: a persona's, a turn's speaker's, or an awaited turn's
    (a dict with `speaker_name` / `speaker_name_en`); English when the reader reads English and
    there is an English name, else the name as written."""
    if who is None or who == "":
        return ""
    if hasattr(who, "speaker_in"):
        return who.speaker_in()
    if hasattr(who, "called"):  # a persona row, or the engine's PersonaSpec (the suggestion box)
        return strip_invisible(who.called("en" if is_english() else "zh"))
    if isinstance(who, dict):
        return strip_invisible(name_in(None, who.get("speaker_name", ""), who.get("speaker_name_en", "")))
    return strip_invisible(str(who))


def _phase_titles() -> dict:
    from debates.engine import registry
    from debates.engine.report import PHASE_TITLES

    titles = dict(PHASE_TITLES)
    for fmt in registry.all_formats():
        titles.update(fmt.phase_titles)
    return titles


@register.filter
def turn_where(turn) -> str:
    """Where a turn stands, for people (never its key): "Round 2", or its phase's title for a
    turn outside the rounds (the host's, the closing synthesis)."""
    round_no = getattr(turn, "round", None) if not isinstance(turn, dict) else turn.get("round")
    phase = getattr(turn, "phase", "") if not isinstance(turn, dict) else turn.get("phase", "")
    if round_no:
        return gettext("Round %(n)d") % {"n": round_no}
    title = _phase_titles().get(phase)
    return gettext(title) if title else ""


@register.filter
def turn_label(turn) -> str:
    """A turn as people name it: its speaker and where it stands ("Huineng · Round 2")."""
    if hasattr(turn, "speaker_in"):  # the speaker's name in the reader's language
        name = turn.speaker_in()
    else:
        name = turn.get("speaker_name", "") if isinstance(turn, dict) else getattr(turn, "speaker_name", "")
    return " · ".join(part for part in (strip_invisible(name), turn_where(turn)) if part)


@register.simple_tag
def turn_named(debate_id, key) -> str:
    """The label of the debate's turn `key` (a fork's or a regeneration's turn), never the key."""
    from debates.models import Turn

    turn = Turn.objects.filter(debate_id=debate_id, key=key).first() if key else None
    return turn_label(turn) if turn else gettext("an earlier turn")


@register.filter
def warning_groups(warnings) -> list[list[dict]]:
    """A debate's warnings by kind (their code), each kind where it first came, in order."""
    groups: dict[str, list[dict]] = {}
    for warning in warnings or []:
        kind = str(warning)
        if isinstance(warning, dict):
            kind = warning.get("code") or warning.get("msgid") or warning.get("text", "")
        groups.setdefault(kind, []).append(warning)
    return list(groups.values())


@register.filter
def visible(text):
    """Plain text without direction overrides or zero-width characters (still autoescaped)."""
    return strip_invisible(text or "")


@register.filter
def unlabelled(text):
    """A streaming turn's text without the label its form puts before the speech ("正文：",
    "Speech: "): the reader sees the speech begin, as in the finished turn (`speech`)."""
    from debates.engine.reading import without_body_label

    return without_body_label(text or "")


@register.simple_tag
def body_labels():
    """The speech labels the page's script drops from a streaming speech ("|" between them)."""
    from debates.engine.reading import BODY_LABELS

    return "|".join(BODY_LABELS)


@register.filter
def error_for(text, show_internals=False):
    """A provider error as this viewer may read it: staff see the server's address, others read
    "the provider" in its place (live frames, rendered once for all viewers, never show it)."""
    text = strip_invisible(text or "")
    return text if show_internals else redact_urls(text, gettext("the provider"))


@register.filter
def tr(value):
    """An engine message (its msgid and values, as stored) in the viewer's language; a plain
    string (older rows, a model's words) as it is."""
    if not value:
        return ""
    if isinstance(value, dict) and "msgid" not in value:  # a row from before messages had msgids
        value = value.get("text", "")
    message = Text.from_dict(value) if isinstance(value, dict) else Text(str(value))
    # Names inside it as this reader knows them (a Chinese debate's warning read in English).
    return strip_invisible(for_reader(message, is_english()).render(gettext))


@register.filter
def verdict_markdown(report) -> str:
    """For pages, which list the warnings themselves."""
    return exports.verdict_markdown(report, warnings=False)


@register.filter
def transcript_markdown(report, turns) -> str:
    """For pages, which show the ledger as a table."""
    return exports.transcript_markdown(report, turns, ledger=False)


@register.filter
def composer_fields(awaiting):
    """The fields of a person's composer for the turn the debate waits for."""
    from debates import human_turns

    return human_turns.fields(awaiting or {})


@register.filter
def iso_time(value):
    """A stored ISO time (a person's deadline) as a datetime, or None."""
    from django.utils.dateparse import parse_datetime

    return parse_datetime(value) if isinstance(value, str) else None


@register.filter
def money(debate_or_cost, unknown=False):
    """USD as a reader wants it: cents where they matter, more digits for fractions of a cent;
    "≥" when some call's price is unknown (the figure is then what is known)."""
    if hasattr(debate_or_cost, "cost"):
        cost, unknown = debate_or_cost.cost or 0.0, debate_or_cost.cost_unknown
    else:
        cost = debate_or_cost
    if cost is None:
        return "?"
    if not cost:
        shown = "$0"
    elif cost < 0.0001:
        shown = "< $0.0001"
    else:
        shown = f"${cost:,.2f}" if cost >= 1 else "$" + f"{cost:.4f}".rstrip("0").rstrip(".")
    return ("≥ " if unknown else "") + shown


@register.filter
def speech(turn, with_summary=True):
    """A turn's text as a reader sees it (`reading.shown_speech`): no label of the grammar for the
    speech itself, the other parts' labels as bold headings, and (`with_summary`) without its
    summary line, which the page shows beside it once. The debate's question, where the turn has
    its debate at hand (the page's and the frames' turns do), is not shown again as its first line."""
    from debates.engine.reading import shown_speech
    from debates.models import Turn

    data = getattr(turn, "data", None) or {}
    summary = getattr(turn, "summary", "") if with_summary else ""
    question = turn.debate.question if isinstance(turn, Turn) and Turn.debate.is_cached(turn) else ""
    return shown_speech(
        getattr(turn, "text", "") or "",
        data.get("parts") if isinstance(data, dict) else None,
        summary=summary,
        question=question,
    )
