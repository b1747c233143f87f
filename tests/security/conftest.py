"""Shared pieces of the security suite: the hostile corpus, an "is this HTML inert?" checker,
clients for the pages, and a helper that runs many debates at once against the fake LLM server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.test import Client

from debates import frames, runner
from personas.manifest.io import import_manifest

CORPUS_PATH = Path(__file__).resolve().parent.parent / "data" / "hostile.json"
REPEAT = re.compile(r"^@@repeat (\d+)@@(.*)$", re.DOTALL)

# What must never reach a page as visible text: direction overrides/embeddings/isolates, the
# zero-width space, the BOM, and NUL.
FORBIDDEN_CHARS = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\ufeff\x00]")
BAD_SCHEMES = ("javascript:", "data:", "vbscript:")
URL_ATTRIBUTES = {
    "href",
    "src",
    "action",
    "formaction",
    "xlink:href",
    "data",
    "poster",
    "background",
    "srcset",
    "ping",
    "cite",
    "codebase",
    "lowsrc",
    "dynsrc",
}
NEVER_TAGS = {"iframe", "object", "embed", "frame", "frameset", "applet", "base", "portal"}
HEAD_ONLY_TAGS = {"style", "link", "meta"}
# htmx runs `hx-on…` attributes and `js:` values as script; the live frames' own out-of-band swaps.
HTMX_SCRIPT = re.compile(r"^(data-)?hx-on")
HTMX_VALUES = re.compile(r"^(data-)?hx-(vals|vars)$")
PAGE_SWAPS = re.compile(
    r"^(true|outerHTML|innerHTML|beforeend:#transcript|beforeend:#phase-\d+-turns|beforeend:#turn-\d+-text)$"
)
TURN_ID = re.compile(r"^turn-\d+$")
# Words of the hostile payloads that no template comment contains.
COMMENT_NEEDLES = ("hidden", "alert", "script", "onerror", "onload", "javascript")


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    payload: str  # expanded: generated payloads are built here, not stored in the corpus

    @property
    def is_manifest(self) -> bool:
        return self.kind == "manifest"


def expand(payload: str) -> str:
    match = REPEAT.match(payload)
    if match:
        size, unit = int(match.group(1)), match.group(2)
        return (unit * (size // len(unit) + 1))[:size]
    return payload


def load_corpus() -> list[Case]:
    raw = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    return [Case(item["id"], item["kind"], expand(item["payload"])) for item in raw]


CORPUS = load_corpus()
TEXT_CASES = [c for c in CORPUS if not c.is_manifest]
MANIFEST_CASES = [c for c in CORPUS if c.is_manifest]


# --- the inert checker ---------------------------------------------------------------------------


def _scheme(value: str) -> str:
    # As a browser parses a URL (WHATWG URL): leading and trailing C0 controls and spaces go, and
    # tabs and newlines anywhere; a space left inside makes the "scheme" a relative path.
    value = value.strip("".join(map(chr, range(0x21))))
    return re.sub("[\t\n\r]", "", value).lower()


class InertChecker(HTMLParser):
    """Walks a page (or a fragment) and lists everything that could run or disguise itself.

    The page's own `<script src="/…">` tags, `<style>`/`<link>`/`<meta>` inside `<head>` and the
    language switch's `onchange` are the only active parts allowed. Form controls that hand the
    stored value back for editing (`<textarea>` content, `<input value>`) keep it exactly, so the
    invisible-character rule does not apply to them; every markup rule does.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []
        self.in_head = False
        self.in_script = False
        self.in_textarea = 0

    def _flag(self, what: str) -> None:
        if what not in self.problems:
            self.problems.append(what)

    def handle_starttag(self, tag, attrs):
        self._element(tag, attrs)
        if tag == "head":
            self.in_head = True
        elif tag == "body":
            self.in_head = False
        elif tag == "textarea":
            self.in_textarea += 1

    def handle_startendtag(self, tag, attrs):
        self._element(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "head":
            self.in_head = False
        elif tag == "script":
            self.in_script = False
        elif tag == "textarea" and self.in_textarea:
            self.in_textarea -= 1

    def _element(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "script":
            src = values.get("src", "")
            if not (src.startswith("/") and not src.startswith("//")):
                self._flag(f"<script> not from this site: {src or 'inline'}")
            self.in_script = True
        if tag in NEVER_TAGS:
            self._flag(f"<{tag}> element")
        if tag in HEAD_ONLY_TAGS and not self.in_head:
            self._flag(f"<{tag}> outside <head>")
        for name, value in values.items():
            # No template carries an inline handler (the Content-Security-Policy would refuse it).
            if name.startswith("on") or HTMX_SCRIPT.match(name):
                self._flag(f"event handler {name}= on <{tag}>")
            if HTMX_VALUES.match(name) and _scheme(value).startswith(("js:", "javascript:")):
                self._flag(f"script in {name}= on <{tag}>")
            # A rewritten turn's frame deletes the attempt it replaced: an empty <div id="turn-N">.
            deletes_a_turn = value == "delete" and tag == "div" and TURN_ID.match(values.get("id", ""))
            if name == "hx-swap-oob" and not PAGE_SWAPS.match(value) and not deletes_a_turn:
                self._flag(f"hx-swap-oob={value[:40]!r} the page never sends")
            if name in URL_ATTRIBUTES and _scheme(value).startswith(BAD_SCHEMES):
                self._flag(f"{name}={value[:40]!r} on <{tag}>")
            if name == "style" and ("javascript:" in _scheme(value) or "expression(" in value.lower()):
                self._flag(f"active style= on <{tag}>")
            if name == "srcdoc":
                self._flag(f"srcdoc= on <{tag}>")
            editable = tag in ("input", "textarea") and name == "value"
            if not editable and FORBIDDEN_CHARS.search(value):
                self._flag(f"invisible character in {name}= on <{tag}>")

    def handle_data(self, data):
        if self.in_script and data.strip():
            self._flag("inline script content")
        if not self.in_textarea and FORBIDDEN_CHARS.search(data):
            found = {f"U+{ord(c):04X}" for c in FORBIDDEN_CHARS.findall(data)}
            self._flag(f"invisible characters in text: {', '.join(sorted(found))}")
        self.text.append(data)

    def handle_comment(self, data):
        if any(needle in data.lower() for needle in COMMENT_NEEDLES):
            self._flag(f"HTML comment from input: <!--{data[:40]}-->")

    def unknown_decl(self, data):
        self._flag(f"markup declaration <![{data[:30]}")


def check_html(html: str) -> tuple[list[str], str]:
    """(problems, the page's text as a reader sees it)."""
    checker = InertChecker()
    checker.feed(html)
    checker.close()
    return checker.problems, "".join(checker.text)


class _FieldErrors(HTMLParser):
    """The error list inside `<div class="field" id="field-NAME">`: what the form shows beside it."""

    def __init__(self, field: str) -> None:
        super().__init__(convert_charrefs=True)
        self.field_id = f"field-{field}"
        self.depth = 0  # div depth inside the field's div; 0 = outside
        self.in_errors = 0
        self.messages: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "div":
            if self.depth:
                self.depth += 1
            elif values.get("id") == self.field_id:
                self.depth = 1
        if self.depth and tag == "ul" and "errorlist" in (values.get("class") or ""):
            self.in_errors += 1
        if self.in_errors and tag == "li":
            self.messages.append("")

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1
        if tag == "ul" and self.in_errors:
            self.in_errors -= 1

    def handle_data(self, data):
        if self.in_errors and self.messages:
            self.messages[-1] += data


def field_errors(html: str, field: str) -> list[str]:
    parser = _FieldErrors(field)
    parser.feed(html)
    return [m.strip() for m in parser.messages if m.strip()]


# --- fixtures ------------------------------------------------------------------------------------

PLAIN_A, PLAIN_B = "sec-plain-a", "sec-plain-b"


def plain_manifest() -> dict:
    """Two plain debaters who critique each other: seats for the question and evidence channels."""
    return {
        "agora_manifest": 1,
        "library": {"slug": "sec-plain", "name": "Plain duel", "format": "duel", "protocol": {"max_rounds": 8}},
        "personas": [
            {
                "slug": slug,
                "name": name,
                "kind": "debater",
                "tier": "master",
                "tradition": tradition,
                "keywords": [slug],
                "cross_critique": [{"target": other, "point": "A plain objection.", "citation": "Plain book, ch. 1"}],
            }
            for slug, name, tradition, other in (
                (PLAIN_A, "Plain Alpha", "first", PLAIN_B),
                (PLAIN_B, "Plain Beta", "second", PLAIN_A),
            )
        ],
    }


@pytest.fixture
def plain_library(db):
    return import_manifest(plain_manifest()).library


def english_client(user=None) -> Client:
    client = Client(headers={"accept-language": "en"})
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def alice_client(alice):
    return english_client(alice)


@pytest.fixture
def staff_client(superuser):
    return english_client(superuser)


# --- running debates -----------------------------------------------------------------------------


async def _reader(layer, channel: str, into: list) -> None:
    while True:
        into.append(await layer.receive(channel))


async def _drain(layer, channel: str, into: list) -> None:
    """Take what is still queued (group_send has already put every frame when the run returns)."""
    while True:
        try:
            into.append(await asyncio.wait_for(layer.receive(channel), timeout=0.02))
        except TimeoutError:
            return


async def run_debates(debate_ids: list[int], *, capture: bool = False, parallel: int = 12) -> dict[int, list]:
    """Run debates to their end in this loop, a few at a time; with `capture`, every frame sent to
    each debate's channel group, in order of arrival (a test channel is subscribed before it starts)."""
    layer = get_channel_layer()
    captured: dict[int, list] = {pk: [] for pk in debate_ids}
    gate = asyncio.Semaphore(parallel)

    async def one(pk: int) -> str:
        async with gate:
            if not capture:
                return await runner.execute(pk, frame_interval=0.01)
            channel = await layer.new_channel()
            await layer.group_add(frames.group(pk, "zh-hans"), channel)
            reader = asyncio.create_task(_reader(layer, channel, captured[pk]))
            try:
                return await runner.execute(pk, frame_interval=0.01)
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
                await _drain(layer, channel, captured[pk])
                await layer.group_discard(frames.group(pk, "zh-hans"), channel)

    outcomes = await asyncio.gather(*(one(pk) for pk in debate_ids))
    bad = {pk: o for pk, o in zip(debate_ids, outcomes, strict=True) if o != "done"}
    if bad:
        from debates.models import Debate

        details = await database_sync_to_async(lambda: {pk: Debate.objects.get(pk=pk).status_detail for pk in bad})()
        raise AssertionError(f"debates did not finish: {bad} {details}")
    return captured


# Under pytest-xdist (`make test` runs two workers) the channel tests run in a worker, and only the
# controller prints: the worker leaves the outcomes in a file the controller reads back.
_OUTCOMES_FILE = "AGORA_HOSTILE_OUTCOMES"


def pytest_configure(config):
    if not hasattr(config, "workerinput") and _OUTCOMES_FILE not in os.environ:
        os.environ[_OUTCOMES_FILE] = str(Path(tempfile.mkdtemp(prefix="agora-hostile-")) / "outcomes.json")


def pytest_sessionfinish(session):
    module = sys.modules.get("tests.security.test_hostile_input")
    if hasattr(session.config, "workerinput") and module is not None and module.OUTCOMES:
        messages = [[channel, case, text] for (channel, case), text in module.MESSAGES.items()]
        Path(os.environ[_OUTCOMES_FILE]).write_text(json.dumps({"outcomes": module.OUTCOMES, "messages": messages}))


def pytest_terminal_summary(terminalreporter):
    """The hostile corpus's outcome table, when its channel tests ran (each of those asserts its
    own cases; this only reports them)."""
    module = sys.modules.get("tests.security.test_hostile_input")
    written = Path(os.environ.get(_OUTCOMES_FILE, "/nonexistent"))
    if (module is None or not module.OUTCOMES) and written.is_file():
        from tests.security import test_hostile_input as module

        saved = json.loads(written.read_text())
        module.OUTCOMES.update(saved["outcomes"])
        module.MESSAGES.update({(channel, case): text for channel, case, text in saved["messages"]})
    if module is not None and module.OUTCOMES:
        terminalreporter.write_sep("-", "hostile input")
        for line in module.outcome_table():
            terminalreporter.write_line(line)
