"""A fifth format, written in one module (here: this test) and registered, runs end to end: the
start form offers it and checks its seats and rounds, the runner runs it through the Tasks API,
the live page, the report and the exports show it. Its own option is on the start form, in the
API's OpenAPI document and among `manage.py debate`'s flags. Nothing else in Agora names it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from debates.engine import registry
from debates.engine.context import DebateContext
from debates.engine.format import Format, Rounds, Seating
from debates.engine.options import option
from debates.engine.plans import plan
from debates.engine.report import ReportBuilder
from debates.engine.spec import CommonOptions
from debates.management.commands.debate import Command as DebateCommand
from debates.models import Debate
from personas.models import Library, Persona


@dataclass
class EchoOptions(CommonOptions):
    rounds: int | None = option(None, kind="round_count", label="Rounds")
    # Declared here only: the doors are made from this description.
    loudness: int | None = option(
        None,
        kind="int",
        label="Loudness",
        help="How many times each echo says the question's last word.",
        minimum=1,
        maximum=3,
        example=2,
    )


class Echo(Format):
    """Each seated persona restates the question in its own words, round after round."""

    name = "echo"
    label = "Echo"
    Options = EchoOptions
    seating = Seating(count=(1, 3), agora_chooses=False)
    rounds = Rounds(user_sets=True, default=1, maximum=2)
    tokens = {"speech": 60}

    async def run(self, ctx: DebateContext) -> str:
        rounds = ctx.options.rounds or self.rounds.default_for(ctx.library.protocol)
        report = ReportBuilder(ctx, title=ctx.spec.question)
        for round_no in range(1, rounds + 1):
            await ctx.phase(round_no, "echo", f"Echo {round_no}")
            for seat in ctx.spec.seats:
                speaker = seat.persona
                await ctx.turn(
                    plan(
                        ctx,
                        speaker,
                        f"echo:{round_no}:{speaker.slug}",
                        round_no=round_no,
                        phase="echo",
                        rules=["Restate the question.", *["Repeat its last word."] * (ctx.options.loudness or 0)],
                        output="One sentence.",
                    )  # fmt: skip
                )
        report.section("echoes", "Echoes", f"{len(ctx.transcript())} echoes")
        await report.emit(verdict_heading="Echo")
        return "done"


@pytest.fixture
def echo_format(db):
    registry.register(Echo())
    library = Library.objects.create(slug="echoes", name="Echoes", format="echo", protocol={"max_rounds": 2})
    for slug in ("echo-a", "echo-b"):
        Persona.objects.create(library=library, slug=slug, name=slug.upper(), description="An echo.")
    yield
    registry.unregister("echo")


async def _wait_done(timeout: float = 30) -> Debate:
    # Through the one thread all sync database work shares (as the runner's does): SQLite's
    # in-memory test database does not wait for a lock held by another thread.
    for _ in range(int(timeout / 0.05)):
        debate = await Debate.objects.aget()
        if debate.status in ("done", "failed", "refused"):
            return debate
        await asyncio.sleep(0.05)
    raise AssertionError(f"debate {debate.pk} still {debate.status}")


@pytest.mark.django_db(transaction=True)
async def test_a_fifth_format_runs_through_form_runner_and_page(echo_format, fast_llm, alice):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    get, post = sync_to_async(client.get), sync_to_async(client.post)
    assert '<option value="echo">Echo</option>' in (await get("/debates/new/")).content.decode()

    # Its own rules reach the form: too many rounds and too many seats are refused beside the field.
    refused = await post("/debates/new/", {"topic": "Echo this?", "format": "echo", "rounds": "5"})
    assert refused.status_code == 200 and "rounds" in refused.context["form"].errors
    assert "personas" in refused.context["form"].errors  # this format never chooses for the user
    assert not await Debate.objects.aexists()

    form = {"topic": "Echo this?", "format": "echo", "personas": ["echo-a", "echo-b"], "rounds": "2"}
    response = await post("/debates/new/", form)
    assert response.status_code == 302, response.context and response.context["form"].errors
    debate = await _wait_done()
    assert debate.status == "done", debate.status_detail
    keys = [key async for key in debate.turns.values_list("key", flat=True)]
    assert keys == ["echo:1:echo-a", "echo:1:echo-b", "echo:2:echo-a", "echo:2:echo-b"]
    live = (await get(f"/debates/{debate.pk}/")).content.decode()
    assert live.count('<article id="turn-') == 4 and "Echo 2" in live
    assert "4 echoes" in (await get(f"/debates/{debate.pk}/report/")).content.decode()
    assert (await get(f"/debates/{debate.pk}/export.json")).json()["format"] == "echo"


@pytest.mark.django_db
def test_a_fifth_formats_option_is_offered_at_every_door(echo_format, alice):
    """Declared once in `EchoOptions`, with no other file touched: the start form draws it (and
    refuses what its description refuses), the OpenAPI document lists it, the CLI has its flag."""
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    part = client.get("/debates/new/part/", {"format": "echo", "topic": ""}).content.decode()
    assert 'id="field-loudness"' in part and 'name="loudness"' in part and "Loudness" in part
    assert "How many times each echo says the question" in part and 'max="3"' in part

    post = {"topic": "Echo this?", "format": "echo", "personas": ["echo-a"], "part_format": "echo"}
    for value in ("0", "4"):
        refused = client.post("/debates/new/", {**post, "loudness": value})
        assert refused.status_code == 200 and "loudness" in refused.context["form"].errors, value
    assert not Debate.objects.exists()
    schema = client.get("/api/v1/openapi.json").json()["components"]["schemas"]["DebateStart"]
    loudness = schema["properties"]["loudness"]
    assert loudness["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 3} and "echo" in loudness["description"]

    help_text = DebateCommand().create_parser("manage.py", "debate").format_help()  # manage.py debate --help
    assert "--loudness N" in help_text and "How many times each echo says" in help_text
