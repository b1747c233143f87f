from django import template
from django.utils.translation import gettext

from agora.text import strip_invisible
from debates.rendering import redact_urls, render_markdown

register = template.Library()


@register.filter
def markdown(text):
    """Sanitised Markdown: see debates.rendering."""
    return render_markdown(text)


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
