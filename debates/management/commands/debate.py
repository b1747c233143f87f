"""`manage.py debate "问题" --format duel [--personas a,b]`: run a debate in the terminal.

Same engine, same persistence as the web: the debate is saved and can be opened in the browser.
"""

import asyncio
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext

from debates import admission, exports, options, runner, running_limit
from debates.engine import events as ev
from debates.engine import registry
from debates.engine.i18n import Text, for_reader
from debates.engine.reading import BODY_LABELS, replaced_key, without_body_label
from debates.engine.text import OWN_SUMMARY_LABELS, field_value
from debates.forms import ENVIRONMENT_SEARCH, NO_RESEARCH, create_debate, default_search
from debates.models import Provider, SearchProvider
from debates.specs import question_language
from personas.models import Persona, is_english


class TerminalSink:
    """Streams the debate to a terminal with speaker labels. One turn streams live at a time;
    turns of a parallel round that run meanwhile are printed whole when they end."""

    def __init__(self, out, english: bool = False):
        self.out = out
        # Speakers and fixed words in the debate's (the report's) language, as its pages name them.
        self.english = english
        self.live: str | None = None
        self.names: dict[str, str] = {}
        self.buffers: dict[str, list[str]] = {}
        self.done: list[tuple[str, str]] = []
        # The live turn's first characters, held until they show whether the speech opens with its
        # form's label ("正文：", "Speech:"), which goes, as on the page (`without_body_label`).
        self.opening: dict[str, str] = {}
        self.streamed: dict[str, list[str]] = {}  # the live turns' text as printed

    def said(self, message) -> str:
        """An engine message (a phase's title, a warning, the checkpoint's question) in the active
        language, with names as this reader knows them, as the pages draw them (`tr`)."""
        if not isinstance(message, Text):
            return str(message)
        return for_reader(message, self.english).render(gettext)

    def write(self, text: str) -> None:
        self.out.write(text, ending="")
        self.out.flush()

    async def emit(self, event):
        if isinstance(event, ev.PhaseStarted):
            self.write(f"\n=== {self.said(event.title)} ===\n")
        elif isinstance(event, ev.TurnStarted):
            english = self.english and event.speaker_name_en
            self.names[event.key] = event.speaker_name_en if english else event.speaker_name
            self.buffers[event.key] = []
            self.opening[event.key] = ""
            if replaced_key(event.key):  # a format had this turn written again: the one above is set aside
                self.write("\n  ↻ " + ("written again:" if self.english else "重写："))
            if self.live is None:
                self.live = event.key
                query = f" 🔍 {event.messages[0]['content']}\n" if event.phase == "search" and event.messages else ""
                self.write(f"\n【{self.names[event.key]}】{query}")
        elif isinstance(event, ev.TextDelta):
            if event.key == self.live:
                self.streamed.setdefault(event.key, []).append(event.text)
                self.write(self._unlabelled(event.key, event.text))
            else:
                self.buffers.setdefault(event.key, []).append(event.text)
        elif isinstance(event, (ev.TurnFinished, ev.TurnFailed)) and not getattr(event, "replayed", False):
            self._end_turn(event)
        elif isinstance(event, ev.Warning):
            said = self.said(event.text)
            self.write(f"\n{said}\n" if said.startswith("⚠") else f"\n⚠ {said}\n")
        elif isinstance(event, ev.Status) and event.status == "loading_model":
            self.write(f"[{event.detail or 'loading model'}]\n")
        elif isinstance(event, ev.Checkpoint):
            self.write(f"\n⏸ {self.said(event.prompt)}\n")

    def _unlabelled(self, key: str, text: str) -> str:
        """What to print of the live turn's next delta: nothing while its opening could still be
        a body label, then the opening without the label (or whole, when it was none)."""
        opening = self.opening.get(key)
        if opening is None:
            return text  # decided
        opening += text
        start = opening.lstrip().lower()
        if start and not any(f"{label}{colon}".startswith(start) for label in BODY_LABELS for colon in ":："):
            del self.opening[key]
            return without_body_label(opening)
        self.opening[key] = opening
        return ""

    def _end_turn(self, event) -> None:
        held = self.opening.pop(event.key, "")  # a speech that ended within a label's length ("正")
        streamed = "".join(self.streamed.pop(event.key, []))
        if event.key == self.live:
            self.write(held)
            if not isinstance(event, ev.TurnFailed) and _replaced(streamed, event.text):
                # The format put other words in its place (a measurement's few tokens become the
                # line saying what was measured): the reader gets what the page then shows.
                self.write(f"\n  ↳ {event.text.strip()}")
        failed = isinstance(event, ev.TurnFailed)
        summary = "Summary" if self.english else "小结"
        if failed:
            ending = f"\n  ✗ {event.error}\n"
        elif not event.summary.strip() or field_value(streamed or event.text, OWN_SUMMARY_LABELS):
            # None (a classification, a measurement), or the speech's own "小结：" line just printed it.
            ending = "\n"
        else:
            ending = f"\n  — {summary}: {event.summary}\n"
        if event.key != self.live:
            self.done.append((event.key, ending))  # printed whole once the live turn ends
            return
        self.write(ending)
        self.live = None
        for key, queued_ending in self.done:
            speech = without_body_label("".join(self.buffers.pop(key, [])))
            self.write(f"\n【{self.names[key]}】{speech}{queued_ending}")
        self.done.clear()
        still_running = [k for k in self.buffers if k != event.key]
        self.buffers.pop(event.key, None)
        if still_running:
            self.live = still_running[0]
            self.write(f"\n【{self.names[self.live]}】{self._unlabelled(self.live, ''.join(self.buffers[self.live]))}")


def _replaced(streamed: str, finished: str) -> bool:
    """Whether the turn's finished text is not the one that streamed (the format replaced it)."""
    said, kept = without_body_label(streamed).strip()[:20], without_body_label(finished).strip()[:20]
    return bool(kept) and not (said.startswith(kept) or kept.startswith(said))


def parse_positions(text: str) -> dict[str, str]:
    """`a=for,b=against` → {"a": "for", "b": "against"}, as each persona card's for/against buttons post."""
    positions = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        slug, _sep, side = (x.strip() for x in item.partition("="))
        if not slug or side not in ("for", "against"):
            raise CommandError(f"--positions: {item!r} is not slug=for or slug=against")
        positions[slug] = side
    return positions


class Command(BaseCommand):
    help = "Run a debate in the terminal and print its report."

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument("--format", default=registry.names()[0], choices=registry.names())
        parser.add_argument("--personas", default="", help="comma-separated persona slugs (in seat order)")
        parser.add_argument("--positions", default="", help="moderated position-based: slug=for,slug=against")
        parser.add_argument(
            "--search",
            default=None,
            help="web research: 'env' (AGORA_SEARCH_BACKEND), a Search provider's name, or 'none' "
            "(default: what the start form offers first)",
        )
        parser.add_argument(
            "--provider",
            default=None,
            help="a provider's name, or 'env' for the environment's model (default: the one chosen with "
            "'Use this model' on the Connect page, else the environment's)",
        )
        parser.add_argument("--model", default="", help="model name (default: the provider's default model)")
        parser.add_argument(
            "--language",
            default="",
            choices=["", *(code for code, _ in settings.LANGUAGES)],
            help="the report's language (default: the question's)",
        )
        parser.add_argument(
            "--owner",
            default="",
            help="username that owns the debate (sees and shares it on the web); without it only users "
            "with the view_all_debates permission see it",
        )
        # Every registered format's options: a flag each (and those kept from before, --budget,
        # --context, --document), and --option NAME=VALUE for any of them.
        options.add_cli_arguments(parser)

    def search_choice(self, value: str | None) -> str:
        if value is None:
            return default_search()
        if value in ("", "none"):
            return NO_RESEARCH
        if value == "env":
            return ENVIRONMENT_SEARCH
        provider = SearchProvider.objects.filter(name=value).first()
        if provider is None:
            raise CommandError(f"--search: no search provider named {value!r} (add one in the admin, or use env)")
        return f"p{provider.pk}"

    def provider_choice(self, value: str | None) -> dict:
        """The form's provider value: left out (the default, `debates.default_model`), "" (the
        environment's) or a row's id."""
        if value is None:
            return {}
        if value in ("", "env"):
            return {"provider": ""}
        provider = Provider.objects.filter(name=value).first()
        if provider is None:
            raise CommandError(f"--provider: no provider named {value!r} (see Connect a model, or the admin)")
        return {"provider": str(provider.pk)}

    def handle(self, *args, **opts):
        # Every message in the question's language (or --language), as its pages would give them:
        # the terminal has no Accept-Language, and the site's default is Chinese.
        with translation.override(opts["language"] or question_language(opts["question"])):
            return self.run_debate(opts)

    def run_debate(self, opts):
        try:  # read as the form reads them; with nobody at the terminal, nothing waits for an answer
            chosen = options.cli_values(opts, unattended=not sys.stdin.isatty())
        except options.OptionError as error:
            raise CommandError(str(error)) from None
        data = {
            **chosen,
            "search": self.search_choice(opts["search"]),
            "topic": opts["question"],
            "format": opts["format"],
            "personas": [s for s in opts["personas"].split(",") if s],
            "positions": parse_positions(opts["positions"]),
            "model": opts["model"],
            **self.provider_choice(opts["provider"]),
        }
        known = Persona.objects.filter(slug__in=data["personas"]).values_list("slug", flat=True)
        unknown = sorted(set(data["personas"]) - set(known))
        if unknown:
            # The form says "a chosen persona is not in the libraries" (the web page only offers
            # existing ones); at the terminal the typed slug is what helps.
            raise CommandError(
                f"personas: no persona with the id(s) {', '.join(unknown)} (see the admin or manage.py export_library)"
            )
        owner = None
        if opts["owner"]:
            from django.contrib.auth import get_user_model

            owner = get_user_model().objects.filter(username=opts["owner"]).first()
            if owner is None:
                raise CommandError(f"no user named {opts['owner']!r}; create one with createsuperuser")
        try:  # admitted as every door is: with --owner, under that user's running limit
            with transaction.atomic():
                debate, errors = create_debate(data, owner=owner)
                if errors:
                    raise CommandError("; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in errors.items()))
                running_limit.admit(debate, "cli.debate")
        except admission.Refused as refusal:
            raise CommandError(str(refusal)) from None
        self.stdout.write(f"Debate #{debate.pk} ({debate.format}) — {debate.question}\n")
        language = opts["language"] or question_language(debate.question)
        sink = TerminalSink(self.stdout, english=is_english(language))
        outcome = asyncio.run(runner.execute(debate.pk, echo=sink))
        while outcome == "waiting":
            reply = input(gettext("Add facts, or press Enter to continue: "))
            try:
                running_limit.admit(debate, "cli.debate", checkpoint_reply=reply)
            except admission.Refused as refusal:
                raise CommandError(str(refusal)) from None
            outcome = asyncio.run(runner.execute(debate.pk, echo=sink))
        debate.refresh_from_db()
        report = getattr(debate, "report", None)
        # In the debate's language, as everything above (the status's own name, not its code).
        ended = gettext("Outcome: %(status)s") % {"status": debate.get_status_display()}
        self.stdout.write(f"\n\n{ended} {debate.status_detail}".rstrip() + "\n")
        if report is not None:
            with translation.override(language):
                self.stdout.write("\n" + exports.verdict_markdown(report) + "\n")
        if outcome not in ("done",):
            raise CommandError(f"the debate ended as {outcome}: {debate.status_detail}")
