from django import template
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.translation import gettext

from agora.text import strip_invisible
from debates import exports
from debates.engine.i18n import Text
from debates.rendering import redact_urls, render_markdown, with_icons

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
def visible(text):
    """Plain text without direction overrides or zero-width characters (still autoescaped)."""
    return strip_invisible(text or "")


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
    return strip_invisible(message.render(gettext))


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
