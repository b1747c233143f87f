from django import template

from debates.rendering import render_markdown, strip_invisible

register = template.Library()


@register.filter
def markdown(text):
    """Sanitised Markdown: see debates.rendering."""
    return render_markdown(text)


@register.filter
def visible(text):
    """Plain text without direction overrides or zero-width characters (still autoescaped)."""
    return strip_invisible(text or "")
