"""A small model of what the live page shows, built from the HTML the server sends.

It applies our fragments the way htmx does (swap by id, append where `beforeend:` says) for the
parts the exactly-once guarantee is about: each streaming turn's text.
"""

from __future__ import annotations

import html
import re

ARTICLE = re.compile(r'<article id="turn-(\d+)" class="turn turn-(\w+)"(.*?)</article>', re.S)
LIVE_TEXT = re.compile(r'<div class="text live" id="turn-\d+-text">(.*?)</div>', re.S)
DELTA = re.compile(r'<div hx-swap-oob="beforeend:#turn-(\d+)-text">(.*?)</div>', re.S)


class PageModel:
    def __init__(self) -> None:
        self.live: dict[int, str] = {}  # running turns' text as shown
        self.finished: set[int] = set()
        self.history: list[tuple[int, str]] = []  # every state a live text passed through

    def apply(self, fragment: str) -> None:
        for pk, state, body in ARTICLE.findall(fragment):
            pk = int(pk)
            if state == "running":
                match = LIVE_TEXT.search(body)
                self._set(pk, html.unescape(match.group(1)) if match else "")
            else:
                self.live.pop(pk, None)
                self.finished.add(pk)
        for pk, text in DELTA.findall(fragment):
            pk = int(pk)
            if pk in self.finished:
                continue
            if pk not in self.live:
                raise AssertionError(f"delta for turn {pk}, which the page does not show")
            self._set(pk, self.live[pk] + html.unescape(text))

    def _set(self, pk: int, text: str) -> None:
        self.live[pk] = text
        self.history.append((pk, text))
