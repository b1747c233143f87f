"""The formats Agora knows: the four built-in ones, and any other registered with `register`
(a plug-in, or a test's), which is then offered everywhere: the start form, suggestions, the
runner, the CLI, the admin's library format."""

from __future__ import annotations

from debates.engine import duel, moderated, panel, roundtable
from debates.engine.format import Format
from debates.engine.options import check_kinds

_FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Offer `fmt` everywhere. Refused (`OptionError`) when a field of its `Options` does not
    describe itself, or gives an option name another kind than a registered format does."""
    others = {name: other.Options for name, other in _FORMATS.items() if name != fmt.name}
    check_kinds(fmt.name, fmt.Options, others)
    _FORMATS[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    _FORMATS.pop(name, None)


def get(name: str) -> Format:
    try:
        return _FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; choose one of {', '.join(_FORMATS)}") from None


def all_formats() -> list[Format]:
    return list(_FORMATS.values())


def names() -> list[str]:
    return list(_FORMATS)


def choices() -> list[tuple[str, str]]:
    """(name, label msgid) pairs, in registration order."""
    return [(f.name, f.label) for f in _FORMATS.values()]


for _module in (duel, panel, roundtable, moderated):
    register(_module.FORMAT)
