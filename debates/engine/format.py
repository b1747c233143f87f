"""What a debate format is, as one object: its name and labels, its options, who sits at the
table, its modes and rounds, what it suggests for a question, what the start form can check before
anything is created, and how it runs.

Each format module defines a `Format` subclass and registers one instance (`registry.register`).
The web layer (form, suggestions, runner, start page) and the CLI ask the format; nothing outside
the format modules and the registry branches on a format's name.

Labels and user-facing texts here are English msgids (marked with `gettext_noop` so the web
layer's catalogue holds them); the web layer translates them for each viewer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from debates.engine import options as described
from debates.engine.i18n import Text, gettext_noop, text
from debates.engine.options import Option
from debates.engine.spec import CommonOptions, LibrarySpec, PersonaSpec

if TYPE_CHECKING:
    from debates.engine.context import DebateContext


@dataclass(frozen=True)
class Mode:
    name: str
    label: str  # msgid
    seats: tuple[int, int] | None = None  # personas this mode seats, when it differs from the format's
    rounds: int | None = None  # rounds this mode runs, when fixed
    positions: bool = False  # each seat argues an assigned side (for / against)
    # Other names a door accepts for it (the roundtable seed's --mode=快速|标准|深度), stored as `name`.
    aliases: tuple[str, ...] = ()

    def named(self, name: str) -> bool:
        return name.strip().lower() in (self.name, *(a.lower() for a in self.aliases))


@dataclass(frozen=True)
class Seating:
    """Who sits at the table."""

    count: tuple[int, int]  # personas a user may choose, min–max
    host_kind: str | None = None  # the persona kind that hosts ("host", "moderator"), if any
    agora_chooses: bool = True  # nobody chosen: the format picks (pairing, the library's roles, …)


@dataclass(frozen=True)
class Rounds:
    """Whether the user sets the number of rounds, and within what: the default and maximum come
    from the library's protocol (`default_rounds`, `max_rounds`) when it has them."""

    user_sets: bool = False
    default: int | None = None
    maximum: int | None = None

    def default_for(self, protocol: dict) -> int | None:
        return int(protocol.get("default_rounds", self.default)) if self.default is not None else None

    def maximum_for(self, protocol: dict) -> int | None:
        return int(protocol.get("max_rounds", self.maximum)) if self.maximum is not None else None


@dataclass(frozen=True)
class Sizing:
    """A format's defaults for a small, slow model: the bundled 1.5B model on a few CPU cores,
    where the defaults sized for a remote model take 15 to 20 minutes. Declared once beside the
    format's own defaults (`Format.local`); the start form applies it to what a debate on the
    bundled model leaves empty, and says so ("sized for the bundled model"). What a person sets
    is kept; remote models keep the format's defaults.

    `options`: defaults of the format's options (its rounds, its mode, a cap, a length);
    `tokens`: max_tokens per turn kind, kept in the debate's `max_tokens` (its turns' allowances);
    `summary`: the msgid the start form states it with."""

    summary: str
    options: dict[str, object] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class Suggestion:
    """What the format would do with a question, shown as the user types."""

    personas: list[tuple[PersonaSpec, str]] = field(default_factory=list)  # (persona, note)
    note: Text | None = None  # how they were chosen
    refusal: Text | None = None  # why the format cannot run this question as it stands


class Format:
    name: ClassVar[str]
    label: ClassVar[str]  # msgid, e.g. "Duel"
    description: ClassVar[str] = ""  # msgid: one line for the start page
    Options: ClassVar[type[CommonOptions]] = CommonOptions
    seating: ClassVar[Seating]
    modes: ClassVar[tuple[Mode, ...]] = ()
    # msgid: when set, "mode left on default" is a choice of its own on the form, saying how the
    # format picks (`effective_mode`); when empty the first mode is the default.
    mode_hint: ClassVar[str] = ""
    # Nobody chosen: show the roles the format picks for confirmation before anything runs (the
    # roundtable seed's "system recommends, user confirms"), instead of picking at run time.
    confirms_choice: ClassVar[bool] = False
    # Real people the question or the start form names ("with X and Y") take seats as L3
    # characters, found in a library or distilled with the debate's model (`debates.characters`).
    seats_characters: ClassVar[bool] = False
    rounds: ClassVar[Rounds] = Rounds()
    # Default max_tokens per turn kind ("speech", "host", "verdict", …); Options.max_tokens overrides.
    tokens: ClassVar[dict[str, int]] = {"speech": 400, "host": 600}
    # The defaults on the bundled local model (None: the format's own fit it).
    local: ClassVar[Sizing | None] = None
    summary_limit: ClassVar[int] = 80
    phase_titles: ClassVar[dict[str, str]] = {}  # the transcript's heading for each of its phases
    parallel_phases: ClassVar[frozenset[str]] = frozenset()  # phases whose turns run at once
    researches: ClassVar[bool] = False  # may search the web for its evidence pack (a search provider)
    # What "swap sides" exchanges: "order" (who opens), "positions" (for and against), "" (nothing).
    sides: ClassVar[str] = ""
    # Its first round has each seat state a thesis (the roundtable's R1): the options an audience
    # votes on "before", once that round has named them (`debates.audience`).
    first_round_theses: ClassVar[bool] = False

    # -- what the start form and the runner ask -----------------------------------------------

    def mode(self, name: str | None) -> Mode | None:
        """The named mode, or the default (first) one when `name` is empty; None when unknown."""
        if not self.modes:
            return None
        if not name:
            return self.modes[0]
        return next((m for m in self.modes if m.named(name)), None)

    def effective_mode(self, question: str, options: CommonOptions, seats: int = 0) -> Mode | None:
        """The mode a debate runs in: the chosen one, or what the format picks for a question and
        this many chosen seats when none is chosen."""
        return self.mode(getattr(options, "mode", ""))

    def options(self) -> dict[str, Option]:
        """The options a person may set at a door, described (`debates.engine.options`)."""
        return described.offered(self.Options)

    def option_bounds(self, opt: Option, protocol: dict) -> tuple[object, float | None, float | None]:
        """(default, lowest, highest) of a number option in a library with this protocol: the
        format's `Rounds` for its rounds, else the library's default and range where its protocol
        names them, else the option's own bounds."""
        if opt.kind == "round_count":
            return self.rounds.default_for(protocol), 1, self.rounds.maximum_for(protocol)
        default = protocol.get(opt.default_key) if opt.default_key else None
        low, high = opt.minimum, opt.maximum
        if opt.range_key and opt.range_key in protocol:
            low, high = protocol[opt.range_key]
        return default, low, high

    def seat_bounds(self, mode: str | None = None) -> tuple[int, int]:
        chosen = self.mode(mode)
        return chosen.seats if chosen and chosen.seats else self.seating.count

    def check(
        self, question: str, personas: list[PersonaSpec], options: CommonOptions, library: LibrarySpec
    ) -> dict[str, Text]:
        """What the start form can know before anything is created: {field name: message}. The
        default checks the seat count and the rounds; formats add what they can decide up front."""
        problems = {}
        mode = self.effective_mode(question, options, len(personas))
        low, high = self.seat_bounds(mode.name if mode else "")
        if (personas or not self.seating.agora_chooses) and not low <= len(personas) <= high:
            bounds = str(low) if low == high else f"{low}–{high}"
            message = gettext_noop("This format seats %(bounds)s personas; you chose %(count)d.")
            problems["personas"] = text(message, bounds=bounds, count=len(personas))
        for name, opt in self.options().items():
            problem = self._option_problem(opt, getattr(options, name, None), library.protocol)
            if problem:
                problems[name] = problem
        return problems

    def _option_problem(self, opt: Option, value, protocol: dict) -> Text | None:
        """What is wrong with one option's value, whoever set it: a choice not among the
        choices, a number outside its bounds (zero too: it is never read as "the default")."""
        if opt.empty(value):  # zero is not empty
            return None
        if opt.kind == "choice" and value not in opt.values():
            return text(opt.invalid or gettext_noop("Choose one of the listed values."))
        if opt.kind == "round_count":
            maximum = self.rounds.maximum_for(protocol)
            if maximum and value > maximum:
                return text(gettext_noop("At most %(max)d rounds in this library."), max=maximum)
        return described.out_of_bounds(opt, value, 1 if opt.kind == "round_count" else None)

    def sized(self, options: CommonOptions, question: str = "", seats: int = 0) -> CommonOptions:
        """`options` sized for the bundled model (`local`): each option the sizing names that was
        left empty takes its value, and the turns' allowances theirs unless already set. A mode
        the question's words pick (the roundtable's "deep"), or one the `seats` chosen do not fit,
        is not imposed."""
        if self.local is None:
            return options
        changed: dict[str, object] = {}
        offered = described.describe(self.Options)
        for name, value in self.local.options.items():
            opt = offered[name]
            if not opt.empty(getattr(options, name)):
                continue
            if opt.kind == "modes":
                picked, low_high = self.effective_mode(question, options), self.seat_bounds(str(value))
                if picked != self.mode("") or (seats and not low_high[0] <= seats <= low_high[1]):
                    continue
            changed[name] = value
        tokens = {**self.local.tokens, **options.max_tokens}
        return dataclasses.replace(options, **changed, max_tokens=tokens)

    def suggest(self, question: str, library: LibrarySpec, options: CommonOptions | None = None) -> Suggestion:
        return Suggestion()

    async def run(self, ctx: DebateContext) -> str:
        raise NotImplementedError

    def turns_planned(self, rounds: int, seats: int) -> list[tuple[int, str]]:
        """(round, kind of turn) of the turns a run of `rounds` rounds with `seats` speakers plans,
        in order, round 0 after the rounds for the closing: what the live estimate of the time left
        counts (`debates.engine.estimate`). By default one speech per speaker per round, then one
        closing turn of the format's last other kind (the duel's close, the verdict, the host's
        synthesis); a format whose rounds differ says so here."""
        closing = [kind for kind in self.tokens if kind != "speech"][-1:] or ["speech"]
        return [(r, "speech") for r in range(1, rounds + 1) for _ in range(seats)] + [(0, closing[0])]

    def __repr__(self) -> str:
        return f"<Format {self.name}>"
