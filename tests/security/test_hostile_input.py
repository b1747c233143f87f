"""The hostile corpus (tests/data/hostile.json) through every channel that carries user, curator or
model text to a page: each (channel, case) is either *rejected* with a clear error beside the
field (or a manifest error with its path) or rendered *inert*. Anything else fails, and the table
of outcomes is printed at the end of the module."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter

import pytest
from asgiref.sync import sync_to_async
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agora.text import strip_invisible
from debates import control
from debates.forms import create_debate
from debates.models import Debate
from debates.rendering import render_markdown
from personas.manifest.errors import ManifestInvalid
from personas.manifest.io import import_manifest
from personas.manifest.text import MAX_MANIFEST_BYTES, parse_manifest
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona
from tests.security.conftest import (
    CORPUS,
    MANIFEST_CASES,
    PLAIN_A,
    PLAIN_B,
    TEXT_CASES,
    Case,
    check_html,
    field_errors,
    run_debates,
)

pytestmark = pytest.mark.django_db(transaction=True)

REJECTED, INERT = "rejected", "inert"
CHANNELS = ("question", "evidence", "persona", "critique", "llm-output", "manifest")
# channel -> case id -> outcome; anything but REJECTED / INERT is a description of what went wrong.
OUTCOMES: dict[str, dict[str, str]] = {}
MESSAGES: dict[tuple[str, str], str] = {}  # (channel, case id) -> the message a rejection showed
PERSONA_TABLES = (Library, Persona, CrossCritique, PairingRule, DomainTemplate)


def outcome_table() -> list[str]:
    """How many cases, and per channel how each ended: printed at the end of the run
    (tests/security/conftest.py's terminal summary), once the channel tests have filled it."""
    rows = []
    for channel in CHANNELS:
        outcomes = OUTCOMES.get(channel, {})
        counts = Counter(o if o in (REJECTED, INERT) else "OTHER" for o in outcomes.values())
        rows.append((channel, len(outcomes), counts[REJECTED], counts[INERT], counts["OTHER"]))
    kinds = Counter(c.kind for c in CORPUS)
    lines = [
        f"Hostile corpus: {len(CORPUS)} cases ({len(TEXT_CASES)} text payloads, {len(MANIFEST_CASES)} manifest "
        f"documents) in {len(kinds)} kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
        f"{'channel':<12} {'cases':>6} {'rejected':>9} {'inert':>6} {'other':>6}",
    ]
    lines += [f"{c:<12} {n:>6} {r:>9} {i:>6} {o:>6}" for c, n, r, i, o in rows]
    total = sum(r[1] for r in rows)
    lines.append(
        f"{'total':<12} {total:>6} {sum(r[2] for r in rows):>9} {sum(r[3] for r in rows):>6} "
        f"{sum(r[4] for r in rows):>6}"
    )
    lines.append("rejections, each with the message shown beside the field or the manifest path:")
    lines += [f"  {channel:<11} {case_id:<26} {message[:110]}" for (channel, case_id), message in MESSAGES.items()]
    return lines


def record(channel: str, case: Case, outcome: str, message: str = "") -> None:
    OUTCOMES.setdefault(channel, {})[case.id] = outcome
    if outcome == REJECTED:
        assert message.strip(), f"{channel}/{case.id}: rejected without a message"
        MESSAGES[(channel, case.id)] = message


def assert_channel(channel: str, cases: list[Case]) -> None:
    got = OUTCOMES.get(channel, {})
    assert set(got) == {c.id for c in cases}, f"{channel}: not every case was classified"
    third: dict[str, list[str]] = {}
    for case_id, outcome in got.items():
        for problem in () if outcome in (REJECTED, INERT) else outcome.split("; "):
            third.setdefault(problem, []).append(case_id)
    assert not third, f"{channel}: neither rejected nor inert:\n" + "\n".join(
        f"  {problem}\n      in {', '.join(ids)}" for problem, ids in third.items()
    )


def shown(payload: str) -> str:
    """What a page may show of a text payload: invisible characters go, the rest stays literal."""
    return strip_invisible(payload).strip()


def db_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in PERSONA_TABLES}


def inert_pages(pages: dict[str, str]) -> list[str]:
    """Problems over several pages, each labelled with where it was seen."""
    found = []
    for where, html in pages.items():
        problems, _text = check_html(html)
        found += [f"{where}: {p}" for p in problems]
    return found


def page_text(html: str) -> str:
    return check_html(html)[1]


def check_exports(client, pk: int) -> tuple[list[str], dict | None]:
    """Exports are downloads, never pages: an attachment, a non-HTML type, no sniffing, and the
    JSON one parses."""
    problems, data = [], None
    for ext, kind in (("md", "text/markdown"), ("json", "application/json")):
        response = client.get(f"/debates/{pk}/export.{ext}")
        if response.status_code != 200:
            problems.append(f"export.{ext}: HTTP {response.status_code}")
            continue
        if not response["Content-Type"].startswith(kind):
            problems.append(f"export.{ext}: served as {response['Content-Type']}")
        if not response["Content-Disposition"].startswith("attachment;"):
            problems.append(f"export.{ext}: not an attachment")
        if response.get("X-Content-Type-Options") != "nosniff":
            problems.append(f"export.{ext}: no X-Content-Type-Options: nosniff")
        if ext == "json":
            try:
                data = json.loads(response.content.decode("utf-8"))
            except ValueError as exc:
                problems.append(f"export.json is not JSON: {exc}")
    return problems, data


def page(client, url: str, params: dict | None = None) -> str:
    response = client.get(url, params or {})
    assert response.status_code == 200, (url, params, response.status_code)
    return response.content.decode()


def debate_pages(client, pk: int) -> dict[str, str]:
    return {"live page": page(client, f"/debates/{pk}/"), "report page": page(client, f"/debates/{pk}/report/")}


def literal_problem(case: Case, text: str, where: str) -> list[str]:
    """A payload shown as plain text must appear exactly as written (escaped markup, template
    syntax and all), less invisible characters."""
    if shown(case.payload) and shown(case.payload) not in text:
        return [f"{where}: the text is not shown literally"]
    return []


TEMPLATE_TAGS = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")


def template_problem(case: Case, text: str, where: str) -> list[str]:
    """Template syntax is shown, never evaluated (Markdown may restyle the text around it)."""
    missing = [tag for tag in TEMPLATE_TAGS.findall(case.payload) if tag not in text]
    return [f"{where}: template syntax not shown literally: {missing}"] if missing else []


@pytest.fixture
def no_running_limit(settings):
    settings.AGORA_MAX_RUNNING_PER_USER = 100_000


@pytest.fixture
def started(monkeypatch):
    """The start view records the new debate instead of running it; the test runs it itself."""
    ids: list[int] = []
    monkeypatch.setattr(control, "dispatch", ids.append)
    return ids


# --- (a) the question and (d) the evidence material, through the start form ------------------------


def submit_form(client, field: str, case: Case) -> tuple[str, int | None, str]:
    """POST the start form with the payload in `field`: (outcome so far, new debate id, message)."""
    data = {"topic": f"Probe question {case.id}?", "format": "duel", "personas": [PLAIN_A, PLAIN_B], "rounds": "1"}
    data[field] = case.payload
    response = client.post("/debates/new/", data)
    if response.status_code == 302:
        match = re.fullmatch(r"/debates/(\d+)/", response["Location"])
        return ("created", int(match.group(1)), "") if match else (f"redirected to {response['Location']}", None, "")
    if response.status_code != 200:
        return f"HTTP {response.status_code}", None, ""
    html = response.content.decode()
    problems = inert_pages({"form page": html})
    messages = field_errors(html, field)
    if problems:
        return "; ".join(problems), None, ""
    if not messages:
        return f"refused without a message beside {field}", None, ""
    return REJECTED, None, " ".join(messages)


async def _form_channel(channel, field, alice_client, fake_llm, started) -> dict[str, int]:
    fake_llm.token_delay = 0.0

    def submit_all():
        created = {}
        for case in TEXT_CASES:
            outcome, pk, message = submit_form(alice_client, field, case)
            if pk is None:
                record(channel, case, outcome, message)
            else:
                created[case.id] = pk
        return created

    created = await sync_to_async(submit_all)()
    assert sorted(started) == sorted(created.values())
    with override_settings(OPENAI_BASE_URL=fake_llm.base_url):
        await run_debates(list(created.values()))
    return created


async def test_question_channel(plain_library, alice_client, fake_llm, started, no_running_limit):
    created = await _form_channel("question", "topic", alice_client, fake_llm, started)

    def check():
        for case in TEXT_CASES:
            if case.id not in created:
                continue
            pk = created[case.id]
            debate = Debate.objects.get(pk=pk)
            pages = debate_pages(alice_client, pk)
            pages["home history"] = page(alice_client, "/", {"q": debate.question})
            problems = inert_pages(pages)
            problems += literal_problem(case, page_text(pages["live page"]), "live page")
            if f"/debates/{pk}/" not in pages["home history"]:
                problems.append("home history: the debate is not listed")
            export_problems, data = check_exports(alice_client, pk)
            problems += export_problems
            if data is not None and data["question"] != debate.question:
                problems.append("export.json: the question changed")
            record("question", case, "; ".join(problems) or INERT)

    await sync_to_async(check)()
    assert_channel("question", TEXT_CASES)
    by_id = OUTCOMES["question"]
    # The limits the form states: a 100 KB question, a NUL byte and a question of invisible characters.
    assert by_id["oversize-100kb"] == by_id["nul-byte"] == by_id["only-invisible"] == REJECTED


async def test_evidence_channel(plain_library, alice_client, fake_llm, started, no_running_limit):
    created = await _form_channel("evidence", "evidence", alice_client, fake_llm, started)

    def check():
        for case in TEXT_CASES:
            if case.id not in created:
                continue
            pk = created[case.id]
            problems = inert_pages(debate_pages(alice_client, pk))
            export_problems, data = check_exports(alice_client, pk)
            problems += export_problems
            if data is not None:
                # Where the material is shown: the export, as data, exactly as cleaned.
                evidence = strip_invisible(case.payload)
                if data["options"].get("evidence", "") != evidence:
                    problems.append("export.json: the evidence changed")
                prompts = json.dumps([t["messages"] for t in data["turns"]], ensure_ascii=False)
                if evidence.strip() and json.dumps(evidence.strip(), ensure_ascii=False)[1:-1] not in prompts:
                    problems.append("the evidence did not reach the prompt")
            record("evidence", case, "; ".join(problems) or INERT)

    await sync_to_async(check)()
    assert_channel("evidence", TEXT_CASES)
    assert OUTCOMES["evidence"]["oversize-100kb"] == OUTCOMES["evidence"]["nul-byte"] == REJECTED


# --- (b) persona fields and (c) cross-critique text, through a manifest import -----------------------


def manifest_pair(prefix: str, n: int, *, persona_text: str | None = None, critique: str | None = None) -> dict:
    """A duel library of two debaters who critique each other and meet on a keyword rule.
    `persona_text` fills the first persona's free-text fields; `critique` its entry against the second."""
    first, second = f"{prefix}{n}-x", f"{prefix}{n}-y"
    hostile = {}
    if persona_text is not None:
        hostile = {
            "name": persona_text,
            "description": persona_text,
            "description_en": persona_text,
            "keywords": [persona_text],
            **{name: persona_text for name in Persona.TEXT_FIELDS},
        }
    point = critique if critique is not None else "A plain objection."
    citation = critique if critique is not None else "Plain book"
    return {
        "agora_manifest": 1,
        "library": {"slug": f"{prefix}-lib-{n}", "name": f"Probe {n}", "format": "duel"},
        "personas": [
            {
                "slug": first,
                "name": f"First {n}",
                "kind": "debater",
                "tier": "master",
                "tradition": "one",
                **hostile,
                "cross_critique": [{"target": second, "point": point, "citation": citation}],
            },
            {
                "slug": second,
                "name": f"Second {n}",
                "kind": "debater",
                "tier": "master",
                "tradition": "two",
                "cross_critique": [{"target": first, "point": "A plain reply.", "citation": "Plain book"}],
            },
        ],
        "pairing_rules": [{"label": f"probe {n}", "keywords": [f"zq{n:03d}zq"], "personas": [first, second]}],
    }


def try_import(manifest: dict, path_prefix: str) -> tuple[str, str] | None:
    """None when imported; else (the outcome of the refusal, its first message)."""
    before = db_counts()
    try:
        import_manifest(manifest)
    except ManifestInvalid as exc:
        if db_counts() != before:
            return "refused, but the database changed", ""
        if not exc.errors or not all(e.path.startswith(path_prefix) and e.message for e in exc.errors):
            return f"refused without a path to the field: {exc.errors}", ""
        return REJECTED, str(exc.errors[0])
    return None


def persona_manifest(n: int, payload: str) -> dict:
    """One debater whose free-text fields all carry the payload; it critiques the plain persona
    PLAIN_A (whose admin page then lists it) and meets it on a keyword rule."""
    slug = f"hp{n}-x"
    return {
        "agora_manifest": 1,
        "library": {"slug": f"hp-lib-{n}", "name": f"Probe {n}", "format": "duel"},
        "personas": [
            {
                "slug": slug,
                "name": payload,
                "kind": "debater",
                "tier": "master",
                "tradition": "probe",
                "keywords": [payload],
                "description": payload,
                "description_en": payload,
                **{name: payload for name in Persona.TEXT_FIELDS},
                "cross_critique": [{"target": PLAIN_A, "point": "A plain objection.", "citation": "Plain book"}],
            }
        ],
        "pairing_rules": [{"label": f"probe {n}", "keywords": [f"zq{n:03d}zq"], "personas": [slug, PLAIN_A]}],
    }


async def test_persona_channel(plain_library, alice, staff_client, alice_client, fake_llm, no_running_limit):
    fake_llm.token_delay = 0.0

    def import_all():
        created = {}
        for n, case in enumerate(TEXT_CASES):
            refused = try_import(persona_manifest(n, case.payload), "personas[0].")
            if refused:
                record("persona", case, *refused)
                continue
            persona = Persona.objects.get(slug=f"hp{n}-x")
            pages = {
                "admin persona page": page(staff_client, f"/admin/personas/persona/{persona.pk}/change/"),
                "admin coverage view": page(
                    staff_client, "/admin/personas/persona/coverage/", {"a": persona.slug, "b": PLAIN_A}
                ),
                "suggestion": page(alice_client, "/debates/suggest/", {"topic": f"zq{n:03d}zq", "format": "duel"}),
            }
            problems = inert_pages(pages)
            if f'data-slug="{persona.slug}"' not in pages["suggestion"]:
                problems.append("suggestion: the persona was not suggested")
            problems += literal_problem(case, page_text(pages["suggestion"]), "suggestion")
            debate, errors = create_debate(
                {"topic": f"Persona probe zq{n:03d}zq?", "format": "duel", "personas": [persona.slug, PLAIN_A]}
                | {"rounds": "1"},
                owner=alice,
            )
            assert not errors, errors
            created[case.id] = (debate.pk, problems)
        return created

    created = await sync_to_async(import_all)()
    with override_settings(OPENAI_BASE_URL=fake_llm.base_url):
        await run_debates([pk for pk, _ in created.values()])

    def check():
        # Pages that list every persona at once: a problem there counts against every case.
        opponent = Persona.objects.get(slug=PLAIN_A)
        shared = inert_pages(
            {
                "start page": page(alice_client, "/debates/new/"),
                "admin page of the opponent": page(staff_client, f"/admin/personas/persona/{opponent.pk}/change/"),
            }
        )
        for case in TEXT_CASES:
            if case.id not in created:
                continue
            pk, problems = created[case.id]
            pages = debate_pages(alice_client, pk)
            problems = problems + inert_pages(pages) + shared
            problems += literal_problem(case, page_text(pages["live page"]), "live page")
            record("persona", case, "; ".join(problems) or INERT)

    await sync_to_async(check)()
    assert_channel("persona", TEXT_CASES)
    assert OUTCOMES["persona"]["oversize-100kb"] == OUTCOMES["persona"]["nul-byte"] == REJECTED


async def test_critique_channel(staff_client):
    def run():
        for n, case in enumerate(TEXT_CASES):
            refused = try_import(manifest_pair("hc", n, critique=case.payload), "personas[0].cross_critique[0].")
            if refused:
                record("critique", case, *refused)
                continue
            first = Persona.objects.get(slug=f"hc{n}-x")
            coverage = page(staff_client, "/admin/personas/persona/coverage/", {"a": first.slug, "b": f"hc{n}-y"})
            pages = {"admin coverage view": coverage}
            problems = inert_pages(pages)
            problems += literal_problem(case, page_text(pages["admin coverage view"]), "admin coverage view")
            record("critique", case, "; ".join(problems) or INERT)

    await sync_to_async(run)()
    assert_channel("critique", TEXT_CASES)
    assert OUTCOMES["critique"]["nul-byte"] == REJECTED


# --- (e) model output: streamed fragments, the final turns and the Markdown report -------------------

MARKER = re.compile(r"zqcase-([a-z0-9-]+)-zq")


async def test_llm_output_channel(plain_library, alice, alice_client, fake_llm):
    payloads = {c.id: c.payload for c in TEXT_CASES}

    def script(request):
        # Every call of a debate (speeches and the closing synthesis) answers with its payload.
        for message in request.get("messages", []):
            match = MARKER.search(str(message.get("content", "")))
            if match:
                return payloads[match.group(1)]
        return None

    fake_llm.script = script
    fake_llm.token_delay = 0.001

    def create_all():
        created = {}
        for case in TEXT_CASES:
            debate, errors = create_debate(
                {"topic": f"Output probe zqcase-{case.id}-zq?", "format": "duel", "personas": [PLAIN_A, PLAIN_B]}
                | {"rounds": "1"},
                owner=alice,
            )
            assert not errors, errors
            created[case.id] = debate.pk
        return created

    created = await sync_to_async(create_all)()
    with override_settings(OPENAI_BASE_URL=fake_llm.base_url):
        frames = await run_debates(list(created.values()), capture=True)

    def check():
        for case in TEXT_CASES:
            pk = created[case.id]
            sent = frames[pk]
            problems = []
            if not any("beforeend:#turn-" in f["html"] for f in sent):
                problems.append("no streamed fragment was captured")
            for i, frame in enumerate(sent):
                problems += [f"frame {i}: {p}" for p in check_html(frame["html"])[0]]
            pages = debate_pages(alice_client, pk)
            problems += inert_pages(pages)
            problems += template_problem(case, page_text(pages["live page"]), "live page")
            problems += template_problem(case, page_text(pages["report page"]), "report page")
            export_problems, data = check_exports(alice_client, pk)
            problems += export_problems
            if data is not None and not data["report"]:
                problems.append("export.json: no report")
            record("llm-output", case, "; ".join(problems) or INERT)

    await sync_to_async(check)()
    assert_channel("llm-output", TEXT_CASES)


# --- manifest documents: malformed, oversized, deeply nested, NUL bytes, hostile fields -------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def hostile_fields_manifest() -> dict:
    mixed = " ".join(
        ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "invoice\u202efdp.exe", "{% debug %}"]
    )
    manifest = manifest_pair("hm", 0, persona_text=mixed, critique=mixed)
    manifest["library"].update({"name": mixed, "description": mixed + " <!-- hidden -->"})
    manifest["pairing_rules"][0]["label"] = mixed
    return manifest


def manifest_document(case: Case) -> bytes:
    base = manifest_pair("md", 0)
    payload = case.payload
    if payload == "@@oversize-manifest@@":
        base["library"]["description"] = "x" * (MAX_MANIFEST_BYTES + 1)
        return json.dumps(base).encode()
    if payload.startswith("@@nested "):
        return nested(int(payload.split()[1].rstrip("@"))).encode()
    if payload.startswith("@@nested-protocol "):
        depth = int(payload.split()[1].rstrip("@"))
        text = json.dumps(base)
        return text.replace(
            '"format": "duel"', '"format": "duel", "protocol": {"deep": ' + nested(depth) + "}"
        ).encode()
    if payload == "@@nul-fields@@":
        nul = copy.deepcopy(base)
        nul["library"]["name"] = "Lib\x00rary"
        nul["personas"][0]["name"] = "First\x00"
        nul["personas"][0]["cross_critique"][0]["point"] = "\x00"
        return json.dumps(nul).encode()  # JSON carries the NUL as \u0000
    if payload == "@@hostile-fields@@":
        return json.dumps(hostile_fields_manifest(), ensure_ascii=False).encode()
    return payload.encode()


def classify_manifest(case: Case, staff_client) -> tuple[str, str]:
    """(outcome, the message shown): through the importer, then through the admin's import page."""
    document = manifest_document(case)
    before = db_counts()
    try:
        import_manifest(parse_manifest(document))
    except ManifestInvalid as exc:
        if not exc.errors or not all(e.path and e.message for e in exc.errors):
            return f"refused without a path: {exc.errors}", ""
        message = str(exc.errors[0])
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure being tested for
        return f"import crashed: {type(exc).__name__}: {str(exc)[:80]}", ""
    else:
        return hostile_import_pages(staff_client), ""
    if db_counts() != before:
        return "refused, but the database changed", ""

    # The same document through the admin's import page: refused there too, with the reasons shown.
    if len(document) > 2 * 1024 * 1024:  # a large document is uploaded as a file, as a curator would
        from django.core.files.uploadedfile import SimpleUploadedFile

        upload = SimpleUploadedFile("big.json", document, content_type="application/json")
        response = staff_client.post("/admin/personas/library/import/", {"file": upload, "replace": "on"})
    else:
        response = staff_client.post(
            "/admin/personas/library/import/", {"text": document.decode("utf-8"), "replace": "on"}
        )
    if response.status_code != 200:
        return f"admin import: HTTP {response.status_code}", ""
    html = response.content.decode()
    problems = inert_pages({"admin import page": html})
    paths = re.findall(r"<tr><td><code>([^<]+)</code></td><td>([^<]+)</td></tr>", html)
    form_errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*><li>([^<]+)</li>', html)
    if not paths and not form_errors:
        problems.append("admin import: refused without a message")
    if db_counts() != before:
        problems.append("admin import: the database changed")
    return "; ".join(problems) or REJECTED, message[:160]


def hostile_import_pages(staff_client) -> str:
    """A manifest that is valid but hostile in every free-text field: its pages must be inert."""
    library = Library.objects.get(slug="hm-lib-0")
    first = Persona.objects.get(slug="hm0-x")
    pages = {
        "admin library page": page(staff_client, f"/admin/personas/library/{library.pk}/change/"),
        "admin persona page": page(staff_client, f"/admin/personas/persona/{first.pk}/change/"),
        "admin coverage view": page(staff_client, "/admin/personas/persona/coverage/", {"a": "hm0-x", "b": "hm0-y"}),
        "home page": page(staff_client, "/"),
        "start page": page(staff_client, "/debates/new/"),
        "suggestion": page(staff_client, "/debates/suggest/", {"topic": "zq000zq", "format": "duel"}),
    }
    problems = inert_pages(pages)
    return "; ".join(problems) or INERT


async def test_manifest_documents(staff_client):
    def run():
        for case in MANIFEST_CASES:
            record("manifest", case, *classify_manifest(case, staff_client))

    await sync_to_async(run)()
    assert_channel("manifest", MANIFEST_CASES)
    assert [c.id for c in MANIFEST_CASES if OUTCOMES["manifest"][c.id] == INERT] == ["manifest-hostile-fields"]


# --- the checker itself ---------------------------------------------------------------------------

# Payloads that are harmless even when pasted raw: template syntax, a tab that Markdown turns into
# spaces (no longer a scheme), an autolink Markdown does not make, Markdown titles it quotes, size.
HARMLESS_RAW = {
    "md-link-javascript-tab",
    "md-autolink-javascript",
    "md-link-title-breakout",
    "md-link-url-breakout",
    "oversize-100kb",
}


def test_the_checker_sees_what_it_must_not_find():
    """Calling a page inert means something only if the checker flags the same payloads used
    unescaped: pasted into a page, converted by Markdown with no sanitiser, or put in an attribute."""
    import markdown

    blind = []
    for case in TEXT_CASES:
        if case.kind == "template" or case.id in HARMLESS_RAW:
            continue
        raw = case.payload
        contexts = [raw, markdown.markdown(raw), f'<input value="{raw}">', f"<p title='{raw}'>x</p>"]
        if not any(check_html(html)[0] for html in contexts):
            blind.append(case.id)
    assert not blind, f"the checker would call these inert even unescaped: {blind}"
    assert check_html("<p>&lt;script&gt;alert(1)&lt;/script&gt; {{ 7*7 }}</p>") == (
        [],
        "<script>alert(1)</script> {{ 7*7 }}",
    )


# --- properties --------------------------------------------------------------------------------------

PROPERTY_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
HOSTILE_TEXT = st.one_of(
    st.sampled_from([c.payload for c in TEXT_CASES if len(c.payload) < 2000]),
    st.text(st.sampled_from(list("<>\"'&=:/()[]!`{}%#*\n abcjavascript\u202e\u2066\u200b\ufeff\x00"))),
    st.text(max_size=60),
)


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(text=st.lists(HOSTILE_TEXT, min_size=1, max_size=4).map("\n\n".join))
def test_rendered_markdown_is_always_inert(text):
    """Whatever a model writes, the sanitised Markdown carries no active content and no invisible
    characters (this is the renderer every turn, verdict and transcript goes through)."""
    problems, _text = check_html(str(render_markdown(text)))
    assert not problems, (text, problems)


def _deep(depth: int):
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | HOSTILE_TEXT
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(HOSTILE_TEXT, inner, max_size=3),
    max_leaves=8,
)
MUTATION_TARGETS = [
    ("library", "name"),
    ("library", "description"),
    ("library", "protocol"),
    ("personas", 0, "name"),
    ("personas", 0, "keywords"),
    ("personas", 0, "cognitive_frame"),
    ("personas", 0, "density_score"),
    ("personas", 0, "cross_critique", 0, "point"),
    ("personas", 0, "cross_critique", 0, "target"),
    ("pairing_rules", 0, "personas"),
    ("pairing_rules", 0, "keywords"),
]


@pytest.mark.django_db
@PROPERTY_SETTINGS
@given(
    target=st.sampled_from(MUTATION_TARGETS),
    value=JSON_VALUE | st.integers(0, 2500).map(_deep),
)
def test_manifest_importer_refuses_cleanly_or_imports(target, value):
    """Any value at any place of a manifest (deeply nested ones included): the import either
    succeeds or is refused with every error naming its path, and a refusal writes nothing."""
    manifest = manifest_pair("pr", 0)
    holder = manifest
    for key in target[:-1]:
        holder = holder[key]
    holder[target[-1]] = value
    before = db_counts()
    try:
        import_manifest(manifest)
    except ManifestInvalid as exc:
        assert exc.errors and all(e.path and e.message for e in exc.errors), exc.errors
        assert db_counts() == before
    else:
        Library.objects.filter(slug="pr-lib-0").delete()
