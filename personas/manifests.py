"""Library manifests: parse, validate, import and export (docs/manifest.md is the contract).

Import is all-or-nothing: every check runs before the first write, inside the same transaction as
the writes, and every defect is reported with the manifest path of the offending field. Export
produces the canonical form (every field present, stable order), so export → import → export is
byte-identical.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Prefetch, ProtectedError, RestrictedError

from personas.models import (
    MAX_ROUNDS,
    SLUG_PATTERN,
    CrossCritique,
    DomainTemplate,
    Library,
    PairingRule,
    Persona,
    format_choices,
    pair_key,
)

MANIFEST_VERSION = 1
MAX_MANIFEST_BYTES = 5 * 1024 * 1024
PROTOCOL_ROUNDS_LIMIT = 100  # a sanity bound: round counts are stored in small integer columns
PROTOCOL_DEPTH_LIMIT = 32  # nesting of the free-form protocol; deeper would exhaust the recursion limit
ROOT = "$"  # path of errors about the document as a whole (malformed JSON, wrong top-level type)

# Phrases that belong to a task decorator, not to a persona: persona text that contains one is
# almost certainly carrying a particular debate question (PROTOCOLS.md, "purity").
PURITY_MARKERS = (
    "本场议题",
    "本次议题",
    "本场辩题",
    "本次辩题",
    "辩题：",
    "辩题:",
    "议题：",
    "议题:",
    "今天的问题",
    "这次讨论的问题",
    "this debate's question",
    "the debate question",
    "today's topic",
    "topic:",
    "topic：",
)
PURITY_FIELDS = (*Persona.TEXT_FIELDS, "description", "description_en")

SOURCES = ("bundled", "external-import")
REQUIRED = object()  # marks a key without a default in the *_FIELDS tables below

# Canonical key order and defaults; export and normalize_manifest follow these tables exactly.
TOP_FIELDS = {
    "agora_manifest": REQUIRED,
    "library": REQUIRED,
    "personas": [],
    "pairing_rules": [],
    "domain_templates": [],
}
LIBRARY_FIELDS = {"slug": REQUIRED, "name": REQUIRED, "format": REQUIRED, "description": "", "protocol": {}}
PERSONA_FIELDS = {
    "slug": REQUIRED,
    "name": REQUIRED,
    "kind": REQUIRED,
    "tier": "",
    "role": "",
    "tradition": "",
    "keywords": [],
    "description": "",
    "description_en": "",
    "cognitive_frame": "",
    "knowledge_domain": "",
    "decision_preferences": "",
    "adversarial_rules": "",
    "expression_style": "",
    "veto_right": False,
    "preferred_model": "",
    "schema_type": "",
    "density_score": None,
    "source": "bundled",
    "cross_critique": [],
}
CRITIQUE_FIELDS = {"target": REQUIRED, "point": REQUIRED, "citation": REQUIRED}
PAIRING_FIELDS = {"label": "", "keywords": [], "personas": REQUIRED, "default_rounds": None}
TEMPLATE_FIELDS = {"slug": REQUIRED, "name": REQUIRED, "keywords": [], "roles": []}

# Persona columns written straight from the manifest (slug is the key, critiques are rows).
PERSONA_COLUMNS = tuple(k for k in PERSONA_FIELDS if k not in ("slug", "cross_critique"))


@dataclass(frozen=True)
class ManifestError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ManifestInvalid(Exception):
    """A manifest was refused. `errors` lists every defect; nothing was written."""

    def __init__(self, errors: Iterable[ManifestError], per_manifest: list[list[ManifestError]] | None = None):
        self.errors = list(errors)
        self.per_manifest = per_manifest if per_manifest is not None else [self.errors]
        super().__init__("\n".join(str(e) for e in self.errors))


@dataclass
class ImportResult:
    library: Library
    created: bool
    personas_created: int = 0
    personas_updated: int = 0
    personas_unchanged: int = 0
    personas_removed: int = 0
    critiques: int = 0
    pairing_rules: int = 0
    domain_templates: int = 0

    def summary(self) -> str:
        verb = "created" if self.created else "updated"
        return (
            f'library "{self.library.slug}" {verb}: personas {self.personas_created} new, '
            f"{self.personas_updated} changed, {self.personas_unchanged} unchanged, "
            f"{self.personas_removed} removed; {self.critiques} cross-critique entries, "
            f"{self.pairing_rules} pairing rules, {self.domain_templates} domain templates"
        )


# --- parsing -----------------------------------------------------------------------------------


class _JSONRefusal(ValueError):
    """Raised from json hooks; JSONDecodeError would carry a misleading position."""


def _refuse_constant(name: str):
    raise _JSONRefusal(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    # json.loads keeps the last of two equal keys silently; that would lose data without a word.
    result = {}
    for key, value in pairs:
        if key in result:
            raise _JSONRefusal(f'duplicate key "{key}" in one object')
        result[key] = value
    return result


def parse_manifest(text: str | bytes) -> Any:
    """Decode a manifest document; raise ManifestInvalid (path "$") on anything that is not JSON."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestInvalid([_root(f"manifest is {len(raw)} bytes; the limit is {MAX_MANIFEST_BYTES}")])
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ManifestInvalid([_root(f"not UTF-8 text (bad byte at offset {exc.start})")]) from exc
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        message = f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise ManifestInvalid([_root(message)]) from exc
    except _JSONRefusal as exc:
        raise ManifestInvalid([_root(f"malformed JSON: {exc}")]) from exc
    except RecursionError as exc:
        raise ManifestInvalid([_root("malformed JSON: nested too deeply")]) from exc


def _root(message: str) -> ManifestError:
    return ManifestError(ROOT, message)


def dump_manifest(data: dict) -> str:
    """The one serialisation Agora writes: UTF-8 text, two-space indent, final newline."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


# --- validation: shapes and types (no database) ---------------------------------------------------


class _Errors(list):
    def add(self, path: str, message: str) -> None:
        self.append(ManifestError(path, message))


def _max_length(model, name: str) -> int | None:
    return model._meta.get_field(name).max_length


def _check_object(value, path: str, fields: dict, errors: _Errors) -> bool:
    """Report a non-object, missing required keys and unknown keys (a typo would lose data)."""
    if not isinstance(value, dict):
        errors.add(path, f"must be an object, got {_type_name(value)}")
        return False
    for key, default in fields.items():
        if default is REQUIRED and key not in value:
            errors.add(_join(path, key), "required field is missing")
    for key in value:
        if key not in fields:
            errors.add(_join(path, key), "unknown field")
    return True


def _join(path: str, key: str) -> str:
    return key if path in ("", ROOT) else f"{path}.{key}"


def _type_name(value) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "an object"
    )


def _text_problem(value: str) -> str | None:
    # Both would fail only at write time (PostgreSQL refuses NUL; no encoder takes lone surrogates).
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate"
    return None


def _check_string(
    value, path: str, errors: _Errors, *, max_length=None, required=False, choices=None, slug=False
) -> bool:
    if not isinstance(value, str):
        errors.add(path, f"must be a string, got {_type_name(value)}")
        return False
    problem = _text_problem(value)
    if problem:
        errors.add(path, problem)
    elif required and not value.strip():
        errors.add(path, "must not be empty")
    elif max_length is not None and len(value) > max_length:
        errors.add(path, f"is {len(value)} characters; the limit is {max_length}")
    elif choices is not None and value not in choices:
        errors.add(path, f"must be one of {', '.join(json.dumps(c) for c in choices)}; got {json.dumps(value)}")
    elif slug and not re.fullmatch(SLUG_PATTERN, value):
        errors.add(path, f"{json.dumps(value)} is not a slug (lowercase letters, digits, single hyphens)")
    else:
        return True
    return False


def _check_string_list(value, path: str, errors: _Errors, *, slugs=False) -> bool:
    if not isinstance(value, list):
        errors.add(path, f"must be a list of strings, got {_type_name(value)}")
        return False
    ok = True
    for i, item in enumerate(value):
        ok &= _check_string(item, f"{path}[{i}]", errors, required=True, slug=slugs)
    return ok


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_list(data: dict, key: str, errors: _Errors) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        errors.add(key, f"must be a list, got {_type_name(value)}")
        return []
    return value


def _check_library(library, errors: _Errors) -> int:
    """Check the library object; return its max_rounds (the bound for per-pair rounds)."""
    if not _check_object(library, "library", LIBRARY_FIELDS, errors):
        return MAX_ROUNDS
    if "slug" in library:
        _check_string(library["slug"], "library.slug", errors, max_length=_max_length(Library, "slug"), slug=True)
    if "name" in library:
        _check_string(library["name"], "library.name", errors, required=True, max_length=_max_length(Library, "name"))
    if "format" in library:
        _check_string(library["format"], "library.format", errors, choices=[name for name, _label in format_choices()])
    _check_string(library.get("description", ""), "library.description", errors)
    return _check_protocol(library.get("protocol", {}), errors)


def _check_protocol(protocol, errors: _Errors) -> int:
    # Free-form per format, but the two round counts are read as integers at run time.
    if not isinstance(protocol, dict):
        errors.add("library.protocol", f"must be an object, got {_type_name(protocol)}")
        return MAX_ROUNDS
    max_rounds = protocol.get("max_rounds", MAX_ROUNDS)
    if not _is_int(max_rounds) or not 1 <= max_rounds <= PROTOCOL_ROUNDS_LIMIT:
        errors.add("library.protocol.max_rounds", f"must be a whole number from 1 to {PROTOCOL_ROUNDS_LIMIT}")
        max_rounds = MAX_ROUNDS
    if "default_rounds" in protocol:
        default = protocol["default_rounds"]
        if not _is_int(default) or not 1 <= default <= max_rounds:
            errors.add("library.protocol.default_rounds", f"must be a whole number from 1 to {max_rounds}")
    if _depth(protocol) > PROTOCOL_DEPTH_LIMIT:
        errors.add("library.protocol", f"is nested more than {PROTOCOL_DEPTH_LIMIT} levels deep")
    else:
        _check_json_text(protocol, "library.protocol", errors)
    return max_rounds


def _depth(value) -> int:
    """How deeply lists and objects nest, found without recursion (a parsed document may nest
    hundreds of levels, enough to overflow the stack of a recursive walk)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _check_json_text(value, path: str, errors: _Errors) -> None:
    """Free-form JSON still has to be storable text."""
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem:
            errors.add(path, problem)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json_text(key, path, errors)
            _check_json_text(item, f"{path}.{key}", errors)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json_text(item, f"{path}[{i}]", errors)


def _check_persona_fields(persona: dict, path: str, errors: _Errors) -> None:
    for name in ("slug", "name", "kind"):
        if name not in persona:
            continue  # _check_object reported it
        _check_string(
            persona[name],
            f"{path}.{name}",
            errors,
            required=True,
            max_length=_max_length(Persona, name),
            choices=Persona.Kind.values if name == "kind" else None,
            slug=name == "slug",
        )
    _check_string(persona.get("tier", ""), f"{path}.tier", errors, choices=Persona.Tier.values)
    _check_string(persona.get("source", "bundled"), f"{path}.source", errors, choices=SOURCES)
    for name in ("role", "tradition", "description", "description_en", "preferred_model", "schema_type"):
        _check_string(persona.get(name, ""), f"{path}.{name}", errors, max_length=_max_length(Persona, name))
    for name in Persona.TEXT_FIELDS:
        _check_string(persona.get(name, ""), f"{path}.{name}", errors)
    _check_string_list(persona.get("keywords", []), f"{path}.keywords", errors)
    if not isinstance(persona.get("veto_right", False), bool):
        errors.add(f"{path}.veto_right", "must be true or false")
    density = persona.get("density_score")
    if density is not None and not (_is_number(density) and (density == -1 or 0 <= density <= 10)):
        errors.add(f"{path}.density_score", "must be null, -1, or a number from 0 to 10")


def _check_procedural(persona: dict, path: str, errors: _Errors) -> None:
    # Hosts and moderators hold procedural power only (the DB constraint persona_host_does_not_debate).
    kind = persona.get("kind")
    if kind not in ("host", "moderator"):
        return
    tier = persona.get("tier", "")
    if isinstance(tier, str) and tier:
        errors.add(f"{path}.tier", f'a {kind} has no tier; use ""')
    if persona.get("veto_right") is True:
        errors.add(f"{path}.veto_right", f"a {kind} has no veto right")


def purity_marker(text: str) -> str | None:
    """The first task-decorator phrase found in `text`, or None."""
    folded = text.replace("’", "'").casefold()
    for marker in PURITY_MARKERS:
        if marker.casefold() in folded:
            return marker
    return None


def _check_purity(persona: dict, path: str, errors: _Errors) -> None:
    texts = [(f"{path}.{name}", persona.get(name)) for name in PURITY_FIELDS]
    keywords = persona.get("keywords")
    if isinstance(keywords, list):
        texts += [(f"{path}.keywords[{i}]", k) for i, k in enumerate(keywords)]
    for field_path, value in texts:
        marker = purity_marker(value) if isinstance(value, str) else None
        if marker:
            errors.add(
                field_path,
                f'reads like a debate question ("{marker}"); persona text describes who the persona '
                "is, the question arrives at run time",
            )


# --- validation: references (batch and database) -------------------------------------------------


@dataclass
class _Context:
    """What a manifest's references may resolve to, for one batch of manifests."""

    replace: bool
    batch_libraries: dict[str, int]  # library slug -> manifest index
    batch_personas: dict[str, tuple[int, str]]  # persona slug -> (manifest index, first path)
    db_personas: dict[str, str]  # persona slug -> library slug, as stored now
    db_libraries: set[str]

    def resolvable(self, slug: str) -> bool:
        # A stored persona of a library in this batch survives only if a manifest lists it.
        if slug in self.batch_personas:
            return True
        return slug in self.db_personas and self.db_personas[slug] not in self.batch_libraries


def _library_slug(data) -> str | None:
    library = data.get("library") if isinstance(data, dict) else None
    slug = library.get("slug") if isinstance(library, dict) else None
    return slug if isinstance(slug, str) else None


def _persona_slugs(data) -> list[tuple[str, str]]:
    """(path, slug) of every persona entry with a string slug, for cross-reference checks."""
    personas = data.get("personas") if isinstance(data, dict) else None
    if not isinstance(personas, list):
        return []
    return [
        (f"personas[{i}].slug", p["slug"])
        for i, p in enumerate(personas)
        if isinstance(p, dict) and isinstance(p.get("slug"), str)
    ]


def _build_context(manifests: Sequence, replace: bool, errors: list[_Errors]) -> _Context:
    ctx = _Context(
        replace=replace,
        batch_libraries={},
        batch_personas={},
        db_personas=dict(Persona.objects.values_list("slug", "library__slug")),
        db_libraries=set(Library.objects.values_list("slug", flat=True)),
    )
    for index, data in enumerate(manifests):
        slug = _library_slug(data)
        if slug is None:
            continue
        if slug in ctx.batch_libraries:
            errors[index].add("library.slug", f'library "{slug}" appears in two manifests of this batch')
        ctx.batch_libraries.setdefault(slug, index)
    for index, data in enumerate(manifests):
        for path, slug in _persona_slugs(data):
            _register_persona(ctx, index, path, slug, errors)
    return ctx


def _register_persona(ctx: _Context, index: int, path: str, slug: str, errors: list[_Errors]) -> None:
    if slug not in ctx.batch_personas:
        ctx.batch_personas[slug] = (index, path)
        return
    first_index, first_path = ctx.batch_personas[slug]
    where = first_path if first_index == index else f"{first_path} of manifest {first_index + 1}"
    errors[index].add(path, f'duplicate persona slug "{slug}" (also at {where})')


def _check_references(data, ctx: _Context, errors: _Errors) -> None:
    own_library = _library_slug(data)
    if own_library is None:
        return  # library.slug is already reported; ownership checks against it would only add noise
    if not ctx.replace and own_library in ctx.db_libraries:
        errors.add("library.slug", f'library "{own_library}" already exists (import with replace to update it)')
    for path, slug in _persona_slugs(data):
        stored_in = ctx.db_personas.get(slug)
        if stored_in and stored_in != own_library and stored_in not in ctx.batch_libraries:
            errors.add(path, f'persona "{slug}" already belongs to library "{stored_in}"; slugs are unique')
    if ctx.replace and own_library in ctx.db_libraries:
        _check_removals(own_library, ctx, errors)


def _check_removals(library_slug: str, ctx: _Context, errors: _Errors) -> None:
    """Refuse to drop a persona that libraries outside this import still point at."""
    removed = [s for s, lib in ctx.db_personas.items() if lib == library_slug and s not in ctx.batch_personas]
    if not removed:
        return
    outside = Library.objects.exclude(slug__in=ctx.batch_libraries)
    used = {
        *CrossCritique.objects.filter(target__slug__in=removed, source__library__in=outside).values_list(
            "target__slug", "source__library__slug"
        ),
        *PairingRule.objects.filter(persona_a__slug__in=removed, library__in=outside).values_list(
            "persona_a__slug", "library__slug"
        ),
        *PairingRule.objects.filter(persona_b__slug__in=removed, library__in=outside).values_list(
            "persona_b__slug", "library__slug"
        ),
        *DomainTemplate.roles.through.objects.filter(
            persona__slug__in=removed, domaintemplate__library__in=outside
        ).values_list("persona__slug", "domaintemplate__library__slug"),
    }
    for slug, other in sorted(used):
        errors.add("personas", f'persona "{slug}" is missing, so it would be removed, but library "{other}" uses it')


def _check_persona_refs(persona: dict, path: str, ctx: _Context, errors: _Errors) -> None:
    entries = persona.get("cross_critique", [])
    if not isinstance(entries, list):
        errors.add(f"{path}.cross_critique", f"must be a list, got {_type_name(entries)}")
        return
    for j, entry in enumerate(entries):
        entry_path = f"{path}.cross_critique[{j}]"
        if not _check_object(entry, entry_path, CRITIQUE_FIELDS, errors):
            continue
        if "point" in entry:
            _check_string(entry["point"], f"{entry_path}.point", errors, required=True)
        if "citation" in entry:
            _check_string(
                entry["citation"],
                f"{entry_path}.citation",
                errors,
                required=True,
                max_length=_max_length(CrossCritique, "citation"),
            )
        if "target" in entry:
            _check_target(entry["target"], persona.get("slug"), f"{entry_path}.target", ctx, errors)


def _check_target(target, own_slug, path: str, ctx: _Context, errors: _Errors) -> None:
    if not _check_string(target, path, errors, required=True):
        return
    if target == own_slug:
        errors.add(path, "a persona cannot critique itself")
    elif not ctx.resolvable(target):
        errors.add(path, f'unknown persona "{target}"')


def _check_persona_ref(slug, path: str, ctx: _Context, errors: _Errors) -> bool:
    if not _check_string(slug, path, errors, required=True):
        return False
    if not ctx.resolvable(slug):
        errors.add(path, f'unknown persona "{slug}"')
        return False
    return True


def _check_pairing_rules(data: dict, max_rounds: int, ctx: _Context, errors: _Errors) -> None:
    seen: dict[str, str] = {}
    for k, rule in enumerate(_check_list(data, "pairing_rules", errors)):
        path = f"pairing_rules[{k}]"
        if not _check_object(rule, path, PAIRING_FIELDS, errors):
            continue
        _check_string(rule.get("label", ""), f"{path}.label", errors, max_length=_max_length(PairingRule, "label"))
        _check_string_list(rule.get("keywords", []), f"{path}.keywords", errors)
        rounds = rule.get("default_rounds")
        if rounds is not None and not (_is_int(rounds) and 1 <= rounds <= max_rounds):
            errors.add(f"{path}.default_rounds", f"must be null or a whole number from 1 to {max_rounds}")
        if "personas" in rule:
            key = _check_pair(rule["personas"], f"{path}.personas", ctx, errors)
            if key in seen:
                errors.add(f"{path}.personas", f"same pair ({key}) as {seen[key]}")
            elif key:
                seen[key] = path


def _check_pair(personas, path: str, ctx: _Context, errors: _Errors) -> str | None:
    if not isinstance(personas, list) or len(personas) != 2:
        errors.add(path, "must be a list of exactly two persona slugs")
        return None
    ok = all([_check_persona_ref(slug, f"{path}[{i}]", ctx, errors) for i, slug in enumerate(personas)])
    if ok and personas[0] == personas[1]:
        errors.add(path, "must name two different personas")
        return None
    return pair_key(*personas) if ok else None


def _check_domain_templates(data: dict, ctx: _Context, errors: _Errors) -> None:
    seen: dict[str, str] = {}
    for k, template in enumerate(_check_list(data, "domain_templates", errors)):
        path = f"domain_templates[{k}]"
        if not _check_object(template, path, TEMPLATE_FIELDS, errors):
            continue
        slug = template.get("slug")
        if "slug" in template and _check_string(
            slug, f"{path}.slug", errors, max_length=_max_length(DomainTemplate, "slug"), slug=True
        ):
            if slug in seen:
                errors.add(f"{path}.slug", f'duplicate template slug "{slug}" (also at {seen[slug]})')
            seen.setdefault(slug, f"{path}.slug")
        if "name" in template:
            _check_string(
                template["name"],
                f"{path}.name",
                errors,
                required=True,
                max_length=_max_length(DomainTemplate, "name"),
            )
        _check_string_list(template.get("keywords", []), f"{path}.keywords", errors)
        _check_roles(template.get("roles", []), f"{path}.roles", ctx, errors)


def _check_roles(roles, path: str, ctx: _Context, errors: _Errors) -> None:
    if not isinstance(roles, list):
        errors.add(path, f"must be a list of persona slugs, got {_type_name(roles)}")
        return
    seen: set[str] = set()
    for i, slug in enumerate(roles):
        if _check_persona_ref(slug, f"{path}[{i}]", ctx, errors):
            if slug in seen:
                errors.add(f"{path}[{i}]", f'"{slug}" is listed twice')
            seen.add(slug)


def _validate_one(data, ctx: _Context, errors: _Errors) -> None:
    if not isinstance(data, dict):
        errors.add(ROOT, f"a manifest is a JSON object, got {_type_name(data)}")
        return
    _check_object(data, ROOT, TOP_FIELDS, errors)
    version = data.get("agora_manifest")
    if "agora_manifest" in data and not (_is_int(version) and version == MANIFEST_VERSION):
        errors.add(
            "agora_manifest",
            f"unsupported version {json.dumps(version)}; this Agora reads {MANIFEST_VERSION}",
        )
    max_rounds = _check_library(data["library"], errors) if "library" in data else MAX_ROUNDS
    for i, persona in enumerate(_check_list(data, "personas", errors)):
        path = f"personas[{i}]"
        if _check_object(persona, path, PERSONA_FIELDS, errors):
            _check_persona_fields(persona, path, errors)
            _check_procedural(persona, path, errors)
            _check_purity(persona, path, errors)
            _check_persona_refs(persona, path, ctx, errors)
    _check_pairing_rules(data, max_rounds, ctx, errors)
    _check_domain_templates(data, ctx, errors)
    _check_references(data, ctx, errors)


def _validate_batch(manifests: Sequence, replace: bool) -> list[list[ManifestError]]:
    errors = [_Errors() for _ in manifests]
    ctx = _build_context(manifests, replace, errors)
    for data, manifest_errors in zip(manifests, errors, strict=True):
        _validate_one(data, ctx, manifest_errors)
    # Once each: a field can trip two checks with the same message.
    return [list(dict.fromkeys(e)) for e in errors]


def validate_manifest(data, *, replace: bool = True) -> list[ManifestError]:
    """Every defect of one manifest against the current database; [] when it would import."""
    return _validate_batch([data], replace)[0]


def validate_manifests(manifests: Sequence, *, replace: bool = True) -> list[list[ManifestError]]:
    """Validate manifests meant to be imported together (they may refer to each other's personas)."""
    return _validate_batch(manifests, replace)


# --- canonical form ------------------------------------------------------------------------------


def _filled(value: dict, fields: dict) -> dict:
    return {
        k: copy.deepcopy(value[k] if k in value else d) for k, d in fields.items() if d is not REQUIRED or k in value
    }


def _density(value):
    """The density column is a float: 7 goes in and 7.0 comes out, so canonical form says 7.0."""
    return None if value is None else float(value)


def normalize_manifest(data: dict) -> dict:
    """A valid manifest in canonical form: every field present, defaults filled, keys in order.

    Importing a manifest into a database without that library and exporting it gives exactly this.
    """
    result = _filled(data, TOP_FIELDS)
    result["library"] = _filled(data["library"], LIBRARY_FIELDS)
    result["personas"] = [_normal_persona(p) for p in result["personas"]]
    result["pairing_rules"] = [_filled(r, PAIRING_FIELDS) for r in result["pairing_rules"]]
    result["domain_templates"] = [_filled(t, TEMPLATE_FIELDS) for t in result["domain_templates"]]
    return result


def _normal_persona(persona: dict) -> dict:
    result = _filled(persona, PERSONA_FIELDS)
    result["density_score"] = _density(result["density_score"])
    result["cross_critique"] = [_filled(c, CRITIQUE_FIELDS) for c in result["cross_critique"]]
    return result


# --- import --------------------------------------------------------------------------------------


def import_manifest(data, *, replace: bool = True) -> ImportResult:
    """Validate, then write one manifest in one transaction; raise ManifestInvalid if refused.

    With replace (the default) an existing library of the same slug is updated in place: its
    personas are upserted by slug, those missing from the manifest removed, and its critiques,
    pairing rules and domain templates replaced. Without replace an existing library is an error.
    """
    return import_manifests([data], replace=replace)[0]


def import_manifests(manifests: Sequence, *, replace: bool = True) -> list[ImportResult]:
    """Import several manifests as one unit, so they may refer to each other's personas."""
    try:
        with transaction.atomic():
            per_manifest = _validate_batch(manifests, replace)
            if any(per_manifest):
                raise ManifestInvalid([e for errs in per_manifest for e in errs], per_manifest)
            return _write_batch([normalize_manifest(m) for m in manifests])
    except (ProtectedError, RestrictedError) as exc:
        # Something outside the persona libraries (e.g. a debate's seat) still holds a removed row.
        held = exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects
        names = sorted({str(obj) for obj in held})
        error = ManifestError("personas", f"a persona missing from the manifest is still in use: {', '.join(names)}")
        raise ManifestInvalid([error]) from exc
    except IntegrityError as exc:
        # Validation should make this unreachable; if not, refuse cleanly instead of a server error.
        raise ManifestInvalid([_root(f"database refused the import: {exc}")]) from exc


def _write_batch(manifests: list[dict]) -> list[ImportResult]:
    results = [_upsert_library(m["library"]) for m in manifests]
    personas = Persona.objects.in_bulk([p["slug"] for m in manifests for p in m["personas"]], field_name="slug")
    for result, manifest in zip(results, manifests, strict=True):
        for entry in manifest["personas"]:
            personas[entry["slug"]] = _upsert_persona(result, entry, personas.get(entry["slug"]))
    listed = set(personas)
    for result in results:
        # After every upsert, so a persona moving between libraries of the batch is kept.
        removed = result.library.personas.exclude(slug__in=listed)
        result.personas_removed = removed.count()
        removed.delete()
    lookup = _PersonaLookup(personas)
    CrossCritique.objects.filter(source__library__in=[r.library for r in results]).delete()
    for result, manifest in zip(results, manifests, strict=True):
        result.critiques = _write_critiques(manifest["personas"], lookup)
        result.pairing_rules = _write_pairing_rules(result.library, manifest["pairing_rules"], lookup)
        result.domain_templates = _write_templates(result.library, manifest["domain_templates"], lookup)
    return results


class _PersonaLookup:
    """Personas by slug: those just written, then any stored persona a reference names."""

    def __init__(self, personas: dict[str, Persona]):
        self.personas = dict(personas)

    def __getitem__(self, slug: str) -> Persona:
        if slug not in self.personas:
            self.personas[slug] = Persona.objects.get(slug=slug)
        return self.personas[slug]


def _upsert_library(entry: dict) -> ImportResult:
    values = {k: entry[k] for k in ("name", "format", "description", "protocol")}
    library, created = Library.objects.update_or_create(slug=entry["slug"], defaults=values)
    return ImportResult(library=library, created=created)


def _upsert_persona(result: ImportResult, entry: dict, persona: Persona | None) -> Persona:
    values = {name: entry[name] for name in PERSONA_COLUMNS}
    if persona is None:
        result.personas_created += 1
        return Persona.objects.create(library=result.library, slug=entry["slug"], **values)
    changed = persona.library_id != result.library.pk or any(getattr(persona, k) != v for k, v in values.items())
    if not changed:
        # Leave updated_at alone: re-loading an unchanged library should not look like an edit.
        result.personas_unchanged += 1
        return persona
    persona.library = result.library
    for name, value in values.items():
        setattr(persona, name, value)
    persona.save()
    result.personas_updated += 1
    return persona


def _write_critiques(personas: list[dict], lookup: _PersonaLookup) -> int:
    rows = [
        CrossCritique(
            source=lookup[p["slug"]],
            target=lookup[c["target"]],
            point=c["point"],
            citation=c["citation"],
            order=j,
        )
        for p in personas
        for j, c in enumerate(p["cross_critique"])
    ]
    CrossCritique.objects.bulk_create(rows)
    return len(rows)


def _write_pairing_rules(library: Library, rules: list[dict], lookup: _PersonaLookup) -> int:
    # Upsert by pair key rather than delete-and-recreate, so rows keep their ids.
    existing = {rule.pair_key: rule for rule in library.pairing_rules.all()}
    for order, entry in enumerate(rules):
        first, second = (lookup[slug] for slug in entry["personas"])
        rule = existing.pop(pair_key(first.slug, second.slug), None) or PairingRule(library=library)
        rule.label, rule.keywords, rule.default_rounds, rule.order = (
            entry["label"],
            entry["keywords"],
            entry["default_rounds"],
            order,
        )
        rule.persona_a, rule.persona_b = first, second
        rule.save()
    PairingRule.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
    return len(rules)


def _write_templates(library: Library, templates: list[dict], lookup: _PersonaLookup) -> int:
    existing = {t.slug: t for t in library.domain_templates.all()}
    through = DomainTemplate.roles.through
    for entry in templates:
        template = existing.pop(entry["slug"], None) or DomainTemplate(library=library, slug=entry["slug"])
        template.name, template.keywords = entry["name"], entry["keywords"]
        template.save()
        template.roles.clear()
        # In manifest order: the through table's ids are the only record of role order.
        through.objects.bulk_create([through(domaintemplate=template, persona=lookup[s]) for s in entry["roles"]])
    DomainTemplate.objects.filter(pk__in=[t.pk for t in existing.values()]).delete()
    return len(templates)


# --- export --------------------------------------------------------------------------------------


def export_library(library: Library) -> dict:
    """The library as a canonical manifest: personas and templates in creation order, critiques
    and pairing rules in their stored order."""
    return {
        "agora_manifest": MANIFEST_VERSION,
        "library": {
            "slug": library.slug,
            "name": library.name,
            "format": library.format,
            "description": library.description,
            "protocol": library.protocol,
        },
        "personas": [_export_persona(p) for p in _personas_for_export(library)],
        "pairing_rules": [_export_rule(r) for r in _rules_for_export(library)],
        "domain_templates": [_export_template(t) for t in library.domain_templates.order_by("id")],
    }


def _personas_for_export(library: Library):
    critiques = CrossCritique.objects.select_related("target").order_by("order", "id")
    return library.personas.order_by("id").prefetch_related(Prefetch("critiques_given", queryset=critiques))


def _export_persona(persona: Persona) -> dict:
    entry = {"slug": persona.slug}
    for name in PERSONA_COLUMNS:
        entry[name] = getattr(persona, name)
    entry["density_score"] = _density(persona.density_score)
    entry["cross_critique"] = [
        {"target": c.target.slug, "point": c.point, "citation": c.citation} for c in persona.critiques_given.all()
    ]
    return {k: entry[k] for k in PERSONA_FIELDS}


def _rules_for_export(library: Library):
    return library.pairing_rules.select_related("persona_a", "persona_b").order_by("order", "id")


def _export_rule(rule: PairingRule) -> dict:
    return {
        "label": rule.label,
        "keywords": rule.keywords,
        "personas": [rule.persona_a.slug, rule.persona_b.slug],
        "default_rounds": rule.default_rounds,
    }


def _export_template(template: DomainTemplate) -> dict:
    rows = DomainTemplate.roles.through.objects.filter(domaintemplate=template).select_related("persona")
    return {
        "slug": template.slug,
        "name": template.name,
        "keywords": template.keywords,
        "roles": [row.persona.slug for row in rows.order_by("id")],
    }


# --- bundled libraries ---------------------------------------------------------------------------

BUNDLED_DIR = Path(__file__).resolve().parent / "libraries"


def bundled_manifest_paths(directory: Path = BUNDLED_DIR) -> list[Path]:
    return sorted(Path(directory).glob("*.json"))


def load_library_files(paths: Sequence[Path]) -> list[ImportResult]:
    """Import manifest files as one batch (they may critique each other's personas).

    Raises ManifestInvalid whose `per_manifest[i]` holds the errors of `paths[i]`; then nothing
    was written. Loading the same files again updates in place and creates no duplicates.
    """
    manifests, per_file = [], []
    for path in paths:
        try:
            manifests.append(parse_manifest(Path(path).read_bytes()))
            per_file.append([])
        except ManifestInvalid as exc:
            manifests.append(None)
            per_file.append(exc.errors)
    if any(per_file):
        raise ManifestInvalid([e for errs in per_file for e in errs], per_file)
    return import_manifests(manifests)
