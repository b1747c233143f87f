"""Every option of every registered format (a test-only fifth one included) can be set through each
front door, the start form, the JSON API and `manage.py debate`, and arrives in the stored
debate's options; zero and out-of-range numbers are refused at each door, beside the field, never
read as "the default". The doors are made from the options' descriptions (`debates.options`), so
this test names no option either: it walks the registry."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.utils.datastructures import MultiValueDict

from debates.api import tokens
from debates.engine import registry
from debates.engine.options import Option
from debates.forms import form_for
from debates.models import Debate
from personas.models import Library, Persona
from tests.web.formpage import errors_in
from tests.web.test_new_format import Echo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("libraries", "no_runs")]

QUESTION = "我们团队是否应该在明年全面转向远程办公？"
NOTES = b"# Costs\n\nRent is forty percent of overheads."


@pytest.fixture
def echo(libraries):
    registry.register(Echo())
    library = Library.objects.create(slug="echoes", name="Echoes", format="echo", protocol={"max_rounds": 2})
    for slug in ("echo-a", "echo-b"):
        Persona.objects.create(library=library, slug=slug, name=slug.upper(), description="An echo.")
    yield
    registry.unregister("echo")


@pytest.fixture
def cli(monkeypatch, tmp_path):
    """`manage.py debate` in this process, at a terminal someone answers (so nothing is set for an
    unattended run), its debate saved but not run."""

    async def not_run(pk, echo=None):
        return "done"

    monkeypatch.setattr("debates.runner.execute", not_run)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    notes = tmp_path / "notes.md"
    notes.write_bytes(NOTES)

    def run(fmt: str, personas: list[str], *flags: str) -> None:
        args = [QUESTION, "--format", fmt, "--personas", ",".join(personas), "--search", "none", *flags]
        call_command("debate", *args, stdout=io.StringIO())

    def file(text: str) -> str:
        path = tmp_path / "value.txt"
        path.write_text(text, encoding="utf-8")
        return str(path)

    run.notes, run.file = str(notes), file
    return run


@pytest.fixture
def api(client, alice):
    _, token = tokens.issue(alice, "doors")

    def post(body: dict):
        return client.post(
            "/api/v1/debates", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )

    return post


def debaters(fmt) -> list[str]:
    return list(
        Persona.objects.filter(library__format=fmt.name, kind=Persona.Kind.DEBATER)
        .order_by("library__name", "tier", "slug")
        .values_list("slug", flat=True)
    )


def candidates(fmt, opt: Option) -> list:
    """Values of the option other than its default, the declared example first."""
    found = [] if opt.example is None else [opt.example]
    if opt.kind in ("int", "round_count", "float"):
        found += [opt.minimum or 1, 2]
    elif opt.kind == "bool":
        found.append(True)
    elif opt.kind == "choice":
        found += opt.values()
    elif opt.kind == "modes":
        found += [m.name for m in fmt.modes if not m.positions]
    elif opt.kind in ("text", "long_text"):
        found.append("Some words for the option.")
    elif opt.kind == "uploads":
        found.append("notes.md")
    return [v for v in found if v != opt.default]


def page_value(opt: Option, value):
    """As the start page posts it."""
    if opt.kind == "bool":
        return "on"
    if opt.kind == "uploads":
        return SimpleUploadedFile("notes.md", NOTES, content_type="text/markdown")
    return str(value)


def accepted(fmt, name: str, value) -> tuple[list[str], dict] | None:
    """A seating the start form accepts with this value (seats vary with the mode), and the
    option as the form reads it; None when no seating fits."""
    opt, slugs = fmt.options()[name], debaters(fmt)
    for count in range(0, len(slugs) + 1):
        data = {"topic": QUESTION, "format": fmt.name, "personas": slugs[:count], name: value}
        if opt.kind == "uploads":
            data[name] = []  # read from a file below
        form = form_for(data)
        if opt.kind == "uploads":
            form.files = MultiValueDict({name: [SimpleUploadedFile("notes.md", NOTES)]})
        if form.is_valid() and not (fmt.confirms_choice and not count):
            return slugs[:count], form.cleaned_data["options"].as_dict()[name]
    return None


def walk(formats: list[str]):
    """(format, option name, seating, value as the doors send it, value as it is stored)."""
    for fmt in (registry.get(name) for name in formats):
        for name, opt in fmt.options().items():
            for value in candidates(fmt, opt):
                found = accepted(fmt, name, value)
                if found:
                    yield fmt, name, found[0], value, found[1]
                    break
            else:
                pytest.fail(f"{fmt.name}.{name}: the start form accepts none of {candidates(fmt, opt)}")


def stored() -> dict:
    debate = Debate.objects.get()
    Debate.objects.all().delete()  # within the running limit
    return debate.options


def test_every_option_of_every_format_arrives_through_every_door(client, api, cli, echo):
    formats = registry.names()
    assert "echo" in formats
    walked = []
    for fmt, name, personas, value, expected in walk(formats):
        walked.append(f"{fmt.name}.{name}")
        opt = fmt.options()[name]
        # The start page.
        page = {"topic": QUESTION, "format": fmt.name, "part_format": fmt.name, "personas": personas}
        response = client.post("/debates/new/", {**page, name: page_value(opt, value)})
        assert response.status_code == 302, (fmt.name, name, response.context and response.context["form"].errors)
        assert stored()[name] == expected, (fmt.name, name, "form")
        # The JSON API: the option's stored shape (documents as read).
        body = {"topic": QUESTION, "format": fmt.name, "personas": personas, name: expected}
        response = api(body)
        assert response.status_code == 201, (fmt.name, name, response.json())
        assert stored()[name] == expected, (fmt.name, name, "api")
        # The terminal: its own flag, then --option NAME=VALUE.
        shown = cli.notes if opt.kind == "uploads" else "true" if opt.kind == "bool" else str(value)
        if opt.cli_file:  # at the terminal the value is a file's text
            shown = cli.file(str(value))
        flag = [opt.flag] if opt.kind == "bool" else [opt.flag, shown]
        for flags in (flag, ["--option", f"{name}={shown}"]):
            cli(fmt.name, personas, *flags)
            assert stored()[name] == expected, (fmt.name, name, flags)
    offered = {f"{fmt.name}.{name}" for fmt in registry.all_formats() for name in fmt.options()}
    assert set(walked) == offered
    assert {"panel.proposition_type", "moderated.max_chars", "moderated.token_budget", "panel.token_budget"} <= offered
    assert {"echo.loudness", "moderated.research", "duel.money_budget"} <= offered


def test_the_old_terminal_flags_still_work(cli):
    """--budget, --context and --document, kept as aliases; --evidence still names a file."""
    evidence = cli.notes.replace("notes.md", "evidence.txt")
    with open(evidence, "w", encoding="utf-8") as handle:
        handle.write("去年云成本上涨 30%。")
    flags = ["--budget", "light", "--context", "半小时", "--document", cli.notes, "--evidence", evidence]
    panel = registry.get("panel")
    cli("panel", debaters(panel), *flags)
    options = stored()
    assert options["research_budget"] == "light" and options["user_context"] == "半小时"
    assert options["evidence"] == "去年云成本上涨 30%。" and options["documents"][0]["name"] == "notes.md"


def numbers(formats: list[str]):
    for fmt in (registry.get(name) for name in formats):
        for name, opt in fmt.options().items():
            if opt.kind in ("int", "float", "round_count"):
                yield fmt, name


def test_zero_is_refused_at_every_door_never_read_as_the_default(client, api, cli, echo):
    refused = []
    for fmt, name in numbers(registry.names()):
        personas = debaters(fmt)[: fmt.seating.count[0]]
        page = {"topic": QUESTION, "format": fmt.name, "part_format": fmt.name, "personas": personas}
        response = client.post("/debates/new/", {**page, name: "0"})
        assert response.status_code == 200 and name in response.context["form"].errors, (fmt.name, name)
        html = response.content.decode()
        assert errors_in(html, f"field-{name}").strip() or errors_in(html, "form-errors").strip(), (fmt.name, name)
        response = api({"topic": QUESTION, "format": fmt.name, "personas": personas, name: 0})
        assert response.status_code == 422 and response.json()["errors"].get(name), (fmt.name, name)
        with pytest.raises(CommandError, match=name):
            cli(fmt.name, personas, "--option", f"{name}=0")
        assert not Debate.objects.exists(), (fmt.name, name)
        refused.append(f"{fmt.name}.{name}")
    assert {"duel.rounds", "moderated.rounds", "panel.token_budget", "moderated.token_budget"} <= set(refused)
    assert {"moderated.max_chars", "panel.money_budget", "echo.loudness"} <= set(refused)


def test_an_unknown_field_is_refused_by_the_api_and_the_terminal(api, cli):
    response = api({"topic": QUESTION, "format": "duel", "round": 3})
    assert response.status_code == 422 and "round" in response.json()["errors"]
    with pytest.raises(CommandError, match="round"):
        cli("duel", [], "--option", "round=3")
    assert not Debate.objects.exists()


def test_the_librarys_option_ranges_leave_the_seat_count_alone(client):
    """The moderated library's max_chars and token_budget ranges were shown as the number of
    personas to choose ("Choose 5000–200000")."""
    html = client.get("/debates/new/part/", {"format": "moderated", "topic": ""}, HTTP_ACCEPT_LANGUAGE="en")
    html = html.content.decode()
    low, high = registry.get("moderated").seating.count
    assert f"Choose {low}–{high}, or none" in html
    protocol = Library.objects.get(format="moderated").protocol
    assert 'max="{}"'.format(protocol["max_chars_range"][1]) in html


def test_api_documents_are_checked_as_carried_ones(api):
    """Documents sent as read (the API has no upload) are checked as strictly as the page's."""
    bad = {"topic": QUESTION, "format": "duel", "documents": [{"name": "x", "kind": "exe", "sections": []}]}
    response = api(bad)
    assert response.status_code == 422 and response.json()["errors"].get("documents")
    assert not Debate.objects.exists()
