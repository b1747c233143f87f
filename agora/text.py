"""Text hygiene both apps need (personas and debates), so neither depends on the other for it."""

import re

# Bidi overrides/isolates and zero-width characters (not ZWJ, which emoji and some scripts need).
INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200c\u200e\u200f\u2060\ufeff\x00]")


def strip_invisible(text: str) -> str:
    """Without characters that could make text visually disguise itself."""
    return INVISIBLE.sub("", text)
