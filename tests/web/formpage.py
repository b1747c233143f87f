"""Reading the start page's HTML in tests: the errors inside an element, its cards and radios."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Errors(HTMLParser):
    """The text of every `.errorlist` inside the element with the given id."""

    def __init__(self, element_id: str) -> None:
        super().__init__()
        self.element_id = element_id
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, inside the element, inside an errorlist)
        self.found = False
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        inside, listing = self.stack[-1][1:] if self.stack else (False, False)
        if attrs.get("id") == self.element_id:
            inside, self.found = True, True
        if inside and "errorlist" in (attrs.get("class") or "").split():
            listing = True
            self.errors.append("")
        if tag not in VOID:
            self.stack.append((tag, inside, listing))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.stack and self.stack[-1][2]:
            self.errors[-1] += data


def errors_in(html: str, element_id: str) -> str:
    """The error text shown inside the element `#element_id` ("" when none); fails when the page
    has no such element."""
    parser = _Errors(element_id)
    parser.feed(html)
    assert parser.found, f"no element #{element_id} on the page"
    return " ".join(" ".join(e.split()) for e in parser.errors).strip()
