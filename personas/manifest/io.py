"""Manifests in and out of the database: import (all or nothing), export in canonical form, and the
bundled libraries. Export → import → export is byte-identical."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Prefetch, ProtectedError, RestrictedError

from personas.manifest.errors import ROOT, ManifestError, ManifestInvalid
from personas.manifest.schema import MANIFEST_VERSION, LibraryEntry, Manifest, PersonaEntry
from personas.manifest.text import parse_manifest
from personas.manifest.validation import validate_manifests
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona, pair_key

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "libraries"
# Persona columns written straight from the manifest (slug is the key, critiques are rows).
PERSONA_COLUMNS = tuple(name for name in PersonaEntry.model_fields if name not in ("slug", "cross_critique"))


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


def normalize_manifest(data: dict) -> dict:
    """A valid manifest in canonical form: every field present, defaults filled, keys in order.

    Importing a manifest into a database without that library and exporting it gives exactly this.
    """
    result = Manifest.model_validate(data).model_dump(exclude={"library": {"protocol"}})
    # The protocol is free-form: kept as written, key order included.
    result["library"]["protocol"] = copy.deepcopy(data["library"].get("protocol", {}))
    return result


# --- import --------------------------------------------------------------------------------------


def import_manifest(data: Any, *, replace: bool = True, source: str | None = None) -> ImportResult:
    """Validate, then write one manifest in one transaction; raise ManifestInvalid if refused.

    With replace (the default) an existing library of the same slug is updated in place: its
    personas are upserted by slug, those missing from the manifest removed, and its critiques,
    pairing rules and domain templates replaced. Without replace an existing library is an error.
    `source`: what every persona is recorded as, whatever the manifest says (the import doors
    record "external-import"); None keeps the manifest's (the bundled libraries, round trips).
    """
    return import_manifests([data], replace=replace, source=source)[0]


def import_manifests(
    manifests: Sequence[Any], *, replace: bool = True, source: str | None = None
) -> list[ImportResult]:
    """Import several manifests as one unit, so they may refer to each other's personas."""
    try:
        with transaction.atomic():
            per_manifest = validate_manifests(manifests, replace=replace)
            if any(per_manifest):
                raise ManifestInvalid([e for errs in per_manifest for e in errs], per_manifest)
            normalized = [normalize_manifest(m) for m in manifests]
            if source is not None:
                # The seed: an imported character file is recorded `source: external-import`. A
                # file cannot claim to be bundled (or distilled here) by saying so.
                for manifest in normalized:
                    for persona in manifest["personas"]:
                        persona["source"] = source
            return _write_batch(normalized)
    except (ProtectedError, RestrictedError) as exc:
        # Something outside the persona libraries (e.g. a debate's seat) still holds a removed row.
        held = exc.protected_objects if isinstance(exc, ProtectedError) else exc.restricted_objects
        names = sorted({str(obj) for obj in held})
        error = ManifestError("personas", f"a persona missing from the manifest is still in use: {', '.join(names)}")
        raise ManifestInvalid([error]) from exc
    except IntegrityError as exc:
        # Validation should make this unreachable; if not, refuse cleanly instead of a server error.
        raise ManifestInvalid([ManifestError(ROOT, f"database refused the import: {exc}")]) from exc


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


class _PersonaLookup(dict):
    """Personas by slug: those just written, then any stored persona a reference names."""

    def __missing__(self, slug: str) -> Persona:
        self[slug] = Persona.objects.get(slug=slug)
        return self[slug]


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
            point_en=c["point_en"],
            citation_en=c["citation_en"],
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
        rule.label, rule.keywords, rule.default_rounds = entry["label"], entry["keywords"], entry["default_rounds"]
        rule.order, rule.persona_a, rule.persona_b = order, first, second
        rule.save()
    PairingRule.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
    return len(rules)


def _write_templates(library: Library, templates: list[dict], lookup: _PersonaLookup) -> int:
    existing = {t.slug: t for t in library.domain_templates.all()}
    through = DomainTemplate.roles.through
    for entry in templates:
        template = existing.pop(entry["slug"], None) or DomainTemplate(library=library, slug=entry["slug"])
        template.name, template.name_en, template.keywords = entry["name"], entry["name_en"], entry["keywords"]
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
    critiques = CrossCritique.objects.select_related("target").order_by("order", "id")
    personas = library.personas.order_by("id").prefetch_related(Prefetch("critiques_given", queryset=critiques))
    rules = library.pairing_rules.select_related("persona_a", "persona_b").order_by("order", "id")
    return {
        "agora_manifest": MANIFEST_VERSION,
        "library": {name: getattr(library, name) for name in LibraryEntry.model_fields},
        "personas": [_export_persona(p) for p in personas],
        "pairing_rules": [
            {
                "label": rule.label,
                "keywords": rule.keywords,
                "personas": [rule.persona_a.slug, rule.persona_b.slug],
                "default_rounds": rule.default_rounds,
            }
            for rule in rules
        ],
        "domain_templates": [_export_template(t) for t in library.domain_templates.order_by("id")],
    }


def _export_persona(persona: Persona) -> dict:
    critiques = [
        {
            "target": c.target.slug,
            "point": c.point,
            "citation": c.citation,
            "point_en": c.point_en,
            "citation_en": c.citation_en,
        }
        for c in persona.critiques_given.all()
    ]
    # The density column is a float: 7 goes in and 7.0 comes out, so canonical form says 7.0.
    density = None if persona.density_score is None else float(persona.density_score)
    return {
        "slug": persona.slug,
        **{name: getattr(persona, name) for name in PERSONA_COLUMNS},
        "density_score": density,
        "cross_critique": critiques,
    }


def _export_template(template: DomainTemplate) -> dict:
    rows = DomainTemplate.roles.through.objects.filter(domaintemplate=template).select_related("persona")
    return {
        "slug": template.slug,
        "name": template.name,
        "name_en": template.name_en,
        "keywords": template.keywords,
        "roles": [row.persona.slug for row in rows.order_by("id")],
    }


# --- bundled libraries ---------------------------------------------------------------------------


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
