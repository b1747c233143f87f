"""The shape of a manifest document: its keys, JSON types, lists and version marker (pydantic).

Lengths, choices, slugs and the rules between fields belong to the Django models (rows.py runs
them). docs/manifest.md publishes this model's JSON Schema; a test keeps the two equal.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from personas.manifest.errors import type_name
from personas.models import DEFAULT_ROUNDS, MAX_ROUNDS

MANIFEST_VERSION = 1
PROTOCOL_ROUNDS_LIMIT = 100  # a sanity bound: round counts are stored in small integer columns
PROTOCOL_DEPTH_LIMIT = 32  # nesting of the free-form protocol; deeper would exhaust the recursion limit


def _no_nul(value: str) -> str:
    # PostgreSQL refuses NUL in text. (A lone surrogate never gets here: pydantic refuses it as not Unicode.)
    if "\x00" in value:
        raise ValueError("contains a NUL character")
    return value


Text = Annotated[str, AfterValidator(_no_nul)]
# The models' blank=False refuses only ""; the admin's forms strip whitespace first, so a manifest
# must not slip "  " past them.
Filled = Annotated[str, StringConstraints(pattern=r"\S"), AfterValidator(_no_nul)]
Words = Annotated[list[Filled], Field(description="a list of strings")]


class _Object(BaseModel):
    # Strict: "7" is not a number, 1 is not true. Unknown keys are refused, since a typo would lose data.
    model_config = ConfigDict(strict=True, extra="forbid")


class Protocol(BaseModel):
    """Format-specific and otherwise free-form; the engine reads the two round counts as integers."""

    model_config = ConfigDict(strict=True, extra="allow")

    max_rounds: int = Field(
        MAX_ROUNDS, ge=1, le=PROTOCOL_ROUNDS_LIMIT, description=f"a whole number from 1 to {PROTOCOL_ROUNDS_LIMIT}"
    )
    default_rounds: int = Field(DEFAULT_ROUNDS, ge=1, description="a whole number from 1 to max_rounds")

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        """Free-form JSON still has to be storable, and walkable without recursion."""
        stack = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, str):
                _no_nul(item)
            elif isinstance(item, dict | list):
                if depth > PROTOCOL_DEPTH_LIMIT:
                    raise ValueError(f"is nested more than {PROTOCOL_DEPTH_LIMIT} levels deep")
                children = [c for pair in item.items() for c in pair] if isinstance(item, dict) else item
                stack.extend((child, depth + 1) for child in children)
        return value

    @field_validator("default_rounds")
    @classmethod
    def _within_max(cls, value: int, info: ValidationInfo) -> int:
        maximum = info.data.get("max_rounds", MAX_ROUNDS)
        if value > maximum:
            raise ValueError(f"must be a whole number from 1 to {maximum}")
        return value


class LibraryEntry(_Object):
    slug: Text
    name: Filled
    format: Text
    description: Text = ""
    protocol: Protocol = Field(default={})


class CritiqueEntry(_Object):
    """What this persona holds against another: `target` is a persona slug of this manifest or the database."""

    target: Filled
    point: Filled
    citation: Filled
    point_en: Text = ""  # in English, for an English duel; empty: the point as written
    citation_en: Text = ""


class PersonaEntry(_Object):
    slug: Text
    name: Filled
    name_en: Text = ""  # the English display name; empty: `name` serves both languages
    kind: Text
    tier: Text = ""
    role: Text = ""
    tradition: Text = ""
    keywords: Words = []
    description: Text = ""
    description_en: Text = ""
    cognitive_frame: Text = ""
    knowledge_domain: Text = ""
    decision_preferences: Text = ""
    adversarial_rules: Text = ""
    expression_style: Text = ""
    # The five parts in English (a field per language, as name_en); empty: the other language's serves.
    cognitive_frame_en: Text = ""
    knowledge_domain_en: Text = ""
    decision_preferences_en: Text = ""
    adversarial_rules_en: Text = ""
    expression_style_en: Text = ""
    veto_right: bool = False
    preferred_model: Text = ""
    schema_type: Text = ""
    density_score: float | None = Field(None, description="null, -1 or a number from 0 to 10")
    source: Text = "bundled"
    cross_critique: list[CritiqueEntry] = []


class PairingEntry(_Object):
    label: Text = ""
    keywords: Words = []
    personas: list[Filled] = Field(min_length=2, max_length=2, description="a list of exactly two persona slugs")
    default_rounds: int | None = None


class TemplateEntry(_Object):
    slug: Text
    name: Filled
    name_en: Text = ""  # the English name; empty: `name` serves both languages
    keywords: Words = []
    roles: list[Filled] = []


class Manifest(_Object):
    """A persona library as one JSON document (docs/manifest.md)."""

    agora_manifest: Literal[1]
    library: LibraryEntry
    personas: list[PersonaEntry] = []
    pairing_rules: list[PairingEntry] = []
    domain_templates: list[TemplateEntry] = []

    @field_validator("agora_manifest", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        # Literal[1] alone would take true (true == 1 in Python).
        if type(value) is not int or value != MANIFEST_VERSION:
            shown = type_name(value) if isinstance(value, dict | list) else json.dumps(value)
            raise ValueError(f"unsupported version {shown}; this Agora reads {MANIFEST_VERSION}")
        return value


def schema_json() -> str:
    """The JSON Schema docs/manifest.md publishes."""
    return json.dumps(Manifest.model_json_schema(), ensure_ascii=False, indent=2)


# --- errors in the manifest's words ----------------------------------------------------------------

EXPECTED = {
    "string_type": "a string",
    "bool_type": "true or false",
    "int_type": "a whole number",
    "float_type": "a number",
    "list_type": "a list",
    "model_type": "an object",
    "dict_type": "an object",
}
MESSAGES = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field",
    "string_unicode": "contains an unpaired surrogate",
    "string_pattern_mismatch": "must not be empty",  # the only pattern is Filled's
}


def schema_errors(data: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """(location, message) for every way `data` departs from the document shape; [] when it fits."""
    try:
        Manifest.model_validate(data)
    except ValidationError as exc:
        return [(error["loc"], _message(error)) for error in exc.errors(include_url=False)]
    return []


def _message(error) -> str:
    kind = error["type"]
    if kind in MESSAGES:
        return MESSAGES[kind]
    if kind == "value_error":
        return str(error["ctx"]["error"])
    field = _field_at(error["loc"])
    expected = field.description if field is not None and field.description else EXPECTED.get(kind)
    if expected is None:
        return error["msg"]  # pydantic's own words for anything not foreseen here
    got = f", got {type_name(error['input'])}" if kind in EXPECTED else ""
    return f"must be {expected}{got}"


def _field_at(location) -> FieldInfo | None:
    """The schema field an error location ends on; None for list items and the document itself."""
    model, field = Manifest, None
    for part in location:
        if isinstance(part, int):
            field = None
            continue
        field = model.model_fields.get(part) if model is not None else None
        if field is None:
            return None
        types = get_args(field.annotation) or (field.annotation,)
        model = next((t for t in types if isinstance(t, type) and issubclass(t, BaseModel)), None)
    return field
