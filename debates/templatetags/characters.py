"""The start form's "Add a character" part (debates/characters.py)."""

from django import template

register = template.Library()


@register.filter
def takes_characters(fmt) -> bool:
    """Does this format (a Format) seat L3 characters the user names (its declaration says)?"""
    return bool(getattr(fmt, "seats_characters", False))
