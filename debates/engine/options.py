"""What an option is: a field of a format's `Options` dataclass that describes itself.

An option is declared once, where the engine reads it, with what every front door needs to offer
it: its kind, its label and help (English msgids, translated by whoever shows them), its choices,
its bounds (fixed, or the key of the library protocol's range), where the start page draws it,
and the terminal flags kept from before. The start form, the API's start schema and the CLI's
flags are made from these descriptions (`debates.options`); none of them names an option.

    @dataclass
    class EchoOptions(CommonOptions):
        loudness: int | None = option(None, kind="int", label=gettext_noop("Loudness"), minimum=1)

The registry refuses a format whose `Options` has a field without a description, and two formats
that give one option name different kinds (one form field, one API field, one flag serves both).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from debates.engine.i18n import gettext_noop, text

# int, float: numbers ("empty" is None); bool: a tick box; choice: one of `choices`; text,
# long_text: a line, a paragraph; modes: one of the format's `modes`; round_count: a number of
# rounds within the format's `Rounds`; uploads: files read into sections (`debates.documents`);
# slugs, per_turn: internal state only (a list of persona slugs, {turn kind: number}).
KINDS = frozenset(
    {"int", "float", "bool", "choice", "text", "long_text", "modes", "round_count", "uploads", "slugs", "per_turn"}
)
NUMBERS = frozenset({"int", "float", "round_count"})
# Where the start page draws an option: the format's own part, its part just after the web
# research choice, the material every format reads (below the part), or "Models (advanced)".
PLACES = frozenset({"format", "search", "material", "advanced"})


class OptionError(ValueError):
    pass


@dataclass(frozen=True)
class Option:
    kind: str
    label: str  # msgid
    help: str = ""  # msgid
    choices: tuple[tuple[str, str], ...] = ()  # (value, label msgid), for kind "choice"
    blank: str = ""  # msgid: the label of "left empty" among the choices (when the default is "")
    invalid: str = ""  # msgid: said when a value is not among the choices
    minimum: float | None = None
    maximum: float | None = None
    # The library protocol's keys of this option's default value and of its [low, high] range,
    # when a library may set them ("max_chars", "max_chars_range").
    default_key: str = ""
    range_key: str = ""
    max_length: int | None = None  # text kinds
    lines: int = 3  # long_text: the box's height on the page
    example: Any = None  # a value that passes the format's checks (API documentation, tests)
    place: str = "format"
    aliases: tuple[str, ...] = ()  # terminal flags kept from before ("--budget")
    cli_file: bool = False  # at the terminal the value names a file whose text it takes
    # What a door where nobody can answer (a terminal without input, a batch) sets, if anything:
    # the roundtable's "no interrupt" runs through a checkpoint nobody would answer.
    unattended: Any = None
    # What a chat door (an OpenAI-compatible request, `debates.as_model`) fills the option with,
    # when the request does not set it: "system", the chat's system messages; "earlier", the
    # conversation before the question. One declaration, read by the door, names no option.
    from_chat: str = ""
    # Set by Agora itself or by the engine's own callers, never offered at a door (the
    # roundtable's seats changed at its checkpoint; per-turn token overrides for benchmarks).
    internal: bool = False
    # Filled from the dataclass field by `describe`:
    name: str = ""
    default: Any = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise OptionError(f"unknown option kind {self.kind!r}; one of {', '.join(sorted(KINDS))}")
        if self.place not in PLACES:
            raise OptionError(f"unknown place {self.place!r}; one of {', '.join(sorted(PLACES))}")
        if self.from_chat not in ("", "system", "earlier"):
            raise OptionError(f"unknown from_chat {self.from_chat!r}; one of system, earlier")
        if self.kind == "choice" and not self.choices:
            raise OptionError("a choice option needs its choices")

    @property
    def flag(self) -> str:
        """The terminal flag named after the option (`--max-chars`)."""
        return "--" + self.name.replace("_", "-")

    def values(self) -> list[str]:
        return [value for value, _label in self.choices]

    def empty(self, value: Any) -> bool:
        """Left empty: nothing said, so the format's (or the library's) default applies."""
        return value is None or value is False or (isinstance(value, str | list | dict | tuple) and not value)


def option(default: Any = None, **meta: Any) -> Any:
    """A dataclass field that describes itself (see the module's docstring). A list or dict
    default is copied for each instance."""
    described = Option(**meta)
    if isinstance(default, list | dict):
        made = type(default)
        return dataclasses.field(default_factory=lambda: made(default), metadata={"option": described})
    return dataclasses.field(default=default, metadata={"option": described})


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


@functools.cache
def describe(options_class: type) -> dict[str, Option]:
    """Every option of an `Options` dataclass, by name, in declaration order (read once per
    class: every form, API call and flag list asks)."""
    described = {}
    missing = []
    for field in dataclasses.fields(options_class):
        meta = field.metadata.get("option")
        if meta is None:
            missing.append(field.name)
            continue
        described[field.name] = dataclasses.replace(meta, name=field.name, default=_default(field))
    if missing:
        raise OptionError(
            f"{options_class.__name__}: describe {', '.join(missing)} with `option(...)` "
            "(debates.engine.options): every door is made from the descriptions"
        )
    return described


def offered(options_class: type) -> dict[str, Option]:
    """The options a person may set at a door (the form, the API, the CLI)."""
    return {name: opt for name, opt in describe(options_class).items() if not opt.internal}


def check_kinds(name: str, options_class: type, others: dict[str, type]) -> None:
    """Refuse an `Options` that gives an option name another kind than a registered format does:
    one form field, one API field and one flag serve every format that takes the option."""
    mine = describe(options_class)
    for other_name, other_class in others.items():
        for option_name, theirs in describe(other_class).items():
            if option_name in mine and mine[option_name].kind != theirs.kind:
                raise OptionError(
                    f"format {name!r}: option {option_name!r} is a {mine[option_name].kind}, but format "
                    f"{other_name!r} has it as a {theirs.kind}; give it another name or the same kind"
                )


def out_of_bounds(opt: Option, value: Any, low: float | None = None, high: float | None = None):
    """The message (a `Text`) when `value` is outside the option's bounds (its own, or those a
    library gives), else None. Zero is a value like any other: never read as "empty"."""
    if value is None or opt.kind not in NUMBERS or isinstance(value, bool):
        return None
    low = opt.minimum if low is None else low
    high = opt.maximum if high is None else high
    if low is not None and value < low:
        return text(gettext_noop("At least %(min)s."), min=_number(low))
    if high is not None and value > high:
        return text(gettext_noop("At most %(max)s."), max=_number(high))
    return None


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
