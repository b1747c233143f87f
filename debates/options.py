"""The front doors' options, made from the formats' own descriptions (`debates.engine.options`).

A format declares an option once, as a described field of its `Options`. This module turns the
registered formats' descriptions into what each door offers: the start form's fields
(`form_fields`), the API's start schema (`api_properties`, `api_problems`) and the terminal's
flags (`add_cli_arguments`, `cli_values`). Nothing here, in the form, the API schema or the CLI
names an option (`tests/app/test_architecture.py` fails when one does): a new format's option
appears at every door with no other file touched.

One option name is one field at each door, whichever formats take it (the registry refuses one
name with two kinds); a door shows and checks it with the chosen format's own description.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import gettext, gettext_lazy

from agora.text import strip_invisible
from debates import documents
from debates.engine import registry
from debates.engine.format import Format
from debates.engine.options import Option, OptionError

TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


def union() -> dict[str, dict[str, Option]]:
    """Every option a registered format offers at the doors: {name: {format name: description}},
    in the order the formats declare them."""
    found: dict[str, dict[str, Option]] = {}
    for fmt in registry.all_formats():
        for name, opt in fmt.options().items():
            found.setdefault(name, {})[fmt.name] = opt
    return found


def described(name: str, fmt: Format | None = None) -> Option:
    """The option as `fmt` describes it, else as the first format that takes it does."""
    takers = union()[name]
    return takers[fmt.name] if fmt is not None and fmt.name in takers else next(iter(takers.values()))


def is_empty(value: Any) -> bool:
    """Nothing said (the default applies). Zero is a value: refused or kept, never dropped."""
    return value is None or value is False or (isinstance(value, str | list | dict | tuple) and not value)


def upload_limit() -> str:
    return f"{settings.AGORA_UPLOAD_MAX_BYTES / 2**20:g} MB"


def help_text(opt: Option, translate=gettext_lazy) -> str:
    """The option's help in the reader's language; the documents' limits filled in."""
    if not opt.help:
        return ""
    shown = translate(opt.help)
    if opt.kind == "uploads":
        kinds = ", ".join(documents.EXTENSIONS)
        shown = shown % {"count": settings.AGORA_UPLOAD_MAX_FILES, "kinds": kinds, "size": upload_limit()}
    return shown


# -- the start form --------------------------------------------------------------------------------


class OptionTextField(forms.CharField):
    """Text without the invisible characters that could disguise it, nor blank ends; checked as
    typed first (a NUL byte is refused, not removed; the length counts what was sent)."""

    def clean(self, value):
        value = super().clean(value)
        return strip_invisible(value).strip() if value else value


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class DocumentsField(forms.FileField):
    """Several files in one input; each is read into text (`debates.documents`) by the form."""

    widget = MultipleFileInput

    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data] if data else []
        return [super(DocumentsField, self).clean(f, initial) for f in files] if files else []


def carried_field(name: str) -> str:
    """The hidden field that carries documents already read (a file input cannot be refilled)."""
    return f"{name}_read"


def form_field(opt: Option) -> forms.Field:
    """The start form's field for one option, as `opt` describes it."""
    common = {"label": gettext_lazy(opt.label), "required": False, "help_text": help_text(opt)}
    attrs = {"aria-describedby": f"id_{opt.name}_help"} if opt.help else {}
    kind = opt.kind
    if kind in ("int", "round_count"):
        low = 1 if kind == "round_count" else opt.minimum
        return forms.IntegerField(min_value=low, max_value=opt.maximum, widget=forms.NumberInput(attrs), **common)
    if kind == "float":
        return forms.FloatField(min_value=opt.minimum, max_value=opt.maximum, widget=forms.NumberInput(attrs), **common)
    if kind == "bool":
        return forms.BooleanField(widget=forms.CheckboxInput(attrs), **common)
    if kind == "choice":
        choices = [(value, gettext_lazy(label)) for value, label in opt.choices]
        if opt.default == "":
            choices.insert(0, ("", gettext_lazy(opt.blank) if opt.blank else "—"))
        errors = {"invalid_choice": gettext_lazy(opt.invalid)} if opt.invalid else {}
        widget = forms.Select(attrs)
        return forms.ChoiceField(choices=choices, initial=opt.default, error_messages=errors, widget=widget, **common)
    if kind == "text":
        return OptionTextField(max_length=opt.max_length, widget=forms.TextInput(attrs), **common)
    if kind == "long_text":
        attrs["rows"] = opt.lines
        return OptionTextField(max_length=opt.max_length, widget=forms.Textarea(attrs), **common)
    if kind == "modes":  # drawn as the format's modes (radio buttons); checked against them
        return forms.CharField(max_length=40, **common)
    if kind == "uploads":
        attrs["accept"] = ",".join(documents.EXTENSIONS)
        return DocumentsField(widget=MultipleFileInput(attrs), **common)
    raise OptionError(f"option {opt.name!r}: no door offers the kind {kind!r}; mark it internal")


def form_fields(fmt: Format | None = None) -> dict[str, forms.Field]:
    """A field for every option some format offers, each as `fmt` describes it where it takes it."""
    fields = {}
    for name in union():
        opt = described(name, fmt)
        fields[name] = form_field(opt)
        if opt.kind == "uploads":
            fields[carried_field(name)] = forms.CharField(required=False, widget=forms.HiddenInput)
    return fields


def as_posted(values: dict[str, Any]) -> dict[str, Any]:
    """Option values from a program (the API's JSON, the CLI's flags) as the page posts them: a
    tick as "on", documents already read in their hidden field; empty values left out (zero is
    kept: the form refuses it where it is out of bounds)."""
    takers = union()
    posted = {}
    for name, value in values.items():
        opt = described(name) if name in takers else None
        if is_empty(value):
            continue
        if opt is not None and opt.kind == "bool" and value is True:
            value = "on"
        elif opt is not None and opt.kind == "uploads" and isinstance(value, list):
            name, value = carried_field(name), json.dumps(value, ensure_ascii=False)
        posted[name] = value
    return posted


# -- the API's start schema ------------------------------------------------------------------------


def _title(name: str) -> str:
    return name.replace("_", " ").title()


def _formats_line(takers: dict[str, Option]) -> str:
    return f"Formats: {', '.join(takers)}."


def _numbers(opt: Option, json_type: str) -> dict:
    kept = {"type": json_type}
    low = 1 if opt.kind == "round_count" else opt.minimum
    if low is not None:
        kept["minimum"] = low
    if opt.maximum is not None:
        kept["maximum"] = opt.maximum
    return {"anyOf": [kept, {"type": "null"}], "default": None}


DOCUMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "kind": {"type": "string", "enum": [e[1:] for e in documents.EXTENSIONS]},
        "sections": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"label": {"type": "string"}, "text": {"type": "string"}},
                "required": ["text"],
            },
        },
    },
    "required": ["name", "kind", "sections"],
}


def api_property(name: str, takers: dict[str, Option]) -> dict:
    """The JSON Schema of one option in the API's start body."""
    opt = next(iter(takers.values()))
    kind = opt.kind
    if kind in ("int", "round_count"):
        schema = _numbers(opt, "integer")
    elif kind == "float":
        schema = _numbers(opt, "number")
    elif kind == "bool":
        schema = {"type": "boolean", "default": False}
    elif kind == "choice":
        values = list(dict.fromkeys(v for o in takers.values() for v in o.values()))
        schema = {"anyOf": [{"type": "string", "enum": values}, {"type": "null"}], "default": None}
    elif kind == "uploads":
        schema = {"type": "array", "items": DOCUMENT_SCHEMA}
    else:  # text, long_text, mode
        schema = {"type": "string", "default": ""}
        if opt.max_length:
            schema["maxLength"] = opt.max_length
    words = [f"{opt.label}: {help_text(opt, str)}" if opt.help else f"{opt.label}."]
    if kind == "modes":
        modes = "; ".join(f"{fmt}: {', '.join(_mode_names(m) for m in registry.get(fmt).modes)}" for fmt in takers)
        words.append(f"Modes — {modes}; empty: the format's default.")
    if kind == "uploads":
        words.append("Documents already read into sections, as a debate's options keep them.")
    words.append(_formats_line(takers))
    schema.update({"title": _title(name), "description": " ".join(words)})
    if opt.example is not None:
        schema["examples"] = [opt.example]
    return schema


def api_properties() -> dict[str, dict]:
    return {name: api_property(name, takers) for name, takers in union().items()}


def _fits(opt: Option, value: Any) -> bool:
    if value is None:
        return True
    if opt.kind in ("int", "round_count"):
        return isinstance(value, int | str) and not isinstance(value, bool)
    if opt.kind == "float":
        return isinstance(value, int | float | str) and not isinstance(value, bool)
    if opt.kind == "bool":
        return isinstance(value, bool)
    if opt.kind == "uploads":
        return isinstance(value, list)
    return isinstance(value, str)


def api_problems(values: dict[str, Any], fixed: set[str]) -> dict[str, str]:
    """{field: message} for body fields that are neither `fixed` (the start schema's own) nor an
    option of a registered format, and for option values of the wrong JSON type. The values
    themselves are checked by the start form, with the page's messages."""
    takers = union()
    problems = {}
    for name, value in values.items():
        if name in fixed:
            continue
        if name not in takers:
            problems[name] = gettext(
                "No such field: the OpenAPI document lists the start fields and every format's options."
            )
        elif not _fits(described(name), value):
            problems[name] = gettext("Not a value of this field's type (%(kind)s).") % {"kind": described(name).kind}
    return problems


# -- the terminal ----------------------------------------------------------------------------------


def _mode_names(mode, sep: str = " / ") -> str:
    """A mode's name and the other names the doors accept for it ("quick / 快速")."""
    return sep.join((mode.name, *mode.aliases))


METAVARS = {"int": "N", "round_count": "N", "float": "X", "text": "TEXT", "long_text": "TEXT", "modes": "MODE"}


def _cli_help(opt: Option, takers: dict[str, Option]) -> str:
    said = f"{opt.label}: {help_text(opt, str)}" if opt.help else opt.label
    notes = []
    if opt.kind == "choice":
        notes.append("|".join(opt.values()))
    if opt.kind == "modes":
        notes += [f"{name}: {'|'.join(_mode_names(m, '|') for m in registry.get(name).modes)}" for name in takers]
    if opt.cli_file:
        notes.append("a file: its text")
    if opt.kind == "uploads":
        notes.append("repeatable")
    notes.append(", ".join(takers))
    return f"{said} ({'; '.join(notes)})".replace("%", "%%")


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """A flag per option (`--max-chars`, and the flags kept from before, `--budget`), and
    `--option NAME=VALUE` for any of them."""
    names = ", ".join(union())
    group = parser.add_argument_group(
        "options of the formats",
        "Each option also as --option NAME=VALUE. A format ignores the options it does not take.",
    )
    group.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"set an option of the format (repeatable): {names}",
    )
    for name, takers in union().items():
        opt = described(name)
        flags = [f for f in (opt.flag, *opt.aliases) if f not in parser._option_string_actions]
        if not flags:  # the command's own flag has this name: --option only
            continue
        kwargs: dict[str, Any] = {"dest": name, "default": None, "help": _cli_help(opt, takers)}
        if opt.kind == "bool":
            kwargs.update(action="store_const", const=True)
        elif opt.kind == "uploads":
            kwargs.update(action="append", metavar="FILE")
        else:
            kwargs["metavar"] = "FILE" if opt.cli_file else "CHOICE" if opt.kind == "choice" else METAVARS[opt.kind]
        group.add_argument(*flags, **kwargs)


def _read_file(opt: Option, path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise OptionError(f"{opt.flag} {path}: {getattr(error, 'strerror', None) or error}") from None


def _read_documents(opt: Option, paths: list[str]) -> list[dict]:
    read = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                read.append(documents.as_option(documents.extract_isolated(os.path.basename(path), handle.read())))
        except OSError as error:
            raise OptionError(f"{opt.flag} {path}: {error.strerror}") from None
        except documents.DocumentError as error:
            raise OptionError(f"{opt.flag}: {error}") from None
    return read


def _from_terminal(opt: Option, raw: Any) -> Any:
    if opt.kind == "uploads":
        return _read_documents(opt, raw)
    if opt.cli_file:
        return _read_file(opt, raw)
    if opt.kind == "bool" and isinstance(raw, str):
        word = raw.strip().lower()
        if word not in TRUE_WORDS + FALSE_WORDS:
            raise OptionError(f"--option {opt.name}={raw}: say true or false")
        return word in TRUE_WORDS
    return raw


def cli_values(parsed: dict[str, Any], unattended: bool = False) -> dict[str, Any]:
    """The options given on the command line, as the form takes them (its checks and messages
    apply). `unattended`: nobody is there to answer (no terminal input), so options that say
    what to do then are set where not given."""
    takers = union()
    given: dict[str, Any] = {name: parsed[name] for name in takers if parsed.get(name) not in (None, [])}
    for item in parsed.get("option") or []:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in takers:
            raise OptionError(f"--option {item!r}: NAME=VALUE with NAME one of {', '.join(takers)}")
        if described(name).kind == "uploads":
            given.setdefault(name, []).append(raw)
        else:
            given[name] = raw
    values = {name: _from_terminal(described(name), raw) for name, raw in given.items()}
    return {**unattended_values(parsed.get("format")), **values} if unattended else values


def unattended_values(fmt_name: str | None) -> dict[str, Any]:
    """What every option of the format `fmt_name` that says what to do when nobody can answer is
    set to at a door where nobody can (a terminal without input, a chat client, an agent): the
    roundtable runs through its checkpoint rather than wait there for ever. Only the format's own:
    another format's option would be refused as not applying."""
    return {
        name: described(name).unattended
        for name, takers in union().items()
        if fmt_name in takers and described(name).unattended is not None
    }
