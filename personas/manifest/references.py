"""What no single row can know: the personas a manifest names exist (in the batch or the database),
nothing is listed twice, and a replace removes no persona that another library still uses.

These checks read the raw document and pass over whatever is malformed: the schema reports that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from personas.manifest.errors import ManifestError
from personas.manifest.rows import rows_of
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona, pair_key


@dataclass
class _Batch:
    """What a manifest's references may resolve to, for one batch of manifests."""

    replace: bool
    db_personas: dict[str, str]  # persona slug -> library slug, as stored now
    db_libraries: set[str]
    libraries: dict[str, int] = field(default_factory=dict)  # library slug -> manifest index
    personas: dict[str, tuple[int, str]] = field(default_factory=dict)  # slug -> (manifest index, first path)

    def resolvable(self, slug: Any) -> bool:
        if not isinstance(slug, str) or not slug.strip() or slug in self.personas:
            return True  # listed, or not a slug at all (the schema says so)
        # A stored persona of a library in this batch survives only if a manifest lists it.
        return slug in self.db_personas and self.db_personas[slug] not in self.libraries


class _Errors(list):
    def add(self, path: str, message: str) -> None:
        self.append(ManifestError(path, message))


def reference_errors(manifests: Sequence[Any], replace: bool) -> list[list[ManifestError]]:
    """Per manifest, every reference that does not resolve and everything listed twice."""
    errors = [_Errors() for _ in manifests]
    batch = _Batch(
        replace=replace,
        db_personas=dict(Persona.objects.values_list("slug", "library__slug")),
        db_libraries=set(Library.objects.values_list("slug", flat=True)),
    )
    for index, data in enumerate(manifests):
        slug = _library_slug(data)
        if slug in batch.libraries:
            errors[index].add("library.slug", f'library "{slug}" appears in two manifests of this batch')
        elif slug is not None:
            batch.libraries[slug] = index
    for index, data in enumerate(manifests):
        for path, slug in _persona_slugs(data):
            _register(batch, index, path, slug, errors[index])
    for data, manifest_errors in zip(manifests, errors, strict=True):
        if isinstance(data, dict):
            _check_manifest(data, batch, manifest_errors)
    return errors


def _library_slug(data: Any) -> str | None:
    library = data.get("library") if isinstance(data, dict) else None
    slug = library.get("slug") if isinstance(library, dict) else None
    return slug if isinstance(slug, str) else None


def _persona_slugs(data: Any) -> list[tuple[str, str]]:
    """(path, slug) of every persona entry with a string slug."""
    rows = rows_of(data, "personas")
    return [(f"personas[{i}].slug", p["slug"]) for i, p in rows if isinstance(p.get("slug"), str)]


def _register(batch: _Batch, index: int, path: str, slug: str, errors: _Errors) -> None:
    if slug not in batch.personas:
        batch.personas[slug] = (index, path)
        return
    first_index, first_path = batch.personas[slug]
    where = first_path if first_index == index else f"{first_path} of manifest {first_index + 1}"
    errors.add(path, f'duplicate persona slug "{slug}" (also at {where})')


def _check_manifest(data: dict, batch: _Batch, errors: _Errors) -> None:
    _check_ownership(data, batch, errors)
    for i, persona in rows_of(data, "personas"):
        for j, critique in rows_of(persona, "cross_critique"):
            path, target = f"personas[{i}].cross_critique[{j}].target", critique.get("target")
            if isinstance(target, str) and target == persona.get("slug"):
                errors.add(path, "a persona cannot critique itself")
            elif not batch.resolvable(target):
                errors.add(path, f'unknown persona "{target}"')
    seen: dict[str, str] = {}
    for k, rule in rows_of(data, "pairing_rules"):
        path, pair = f"pairing_rules[{k}].personas", rule.get("personas")
        if not isinstance(pair, list) or len(pair) != 2 or not _resolve(pair, path, batch, errors):
            continue
        key = pair_key(*pair)
        if pair[0] == pair[1]:
            errors.add(path, "must name two different personas")
        elif key in seen:
            errors.add(path, f"same pair ({key}) as {seen[key]}")
        else:
            seen[key] = f"pairing_rules[{k}]"
    templates: dict[str, str] = {}
    for k, template in rows_of(data, "domain_templates"):
        slug = template.get("slug")
        if isinstance(slug, str) and slug in templates:
            errors.add(f"domain_templates[{k}].slug", f'duplicate template slug "{slug}" (also at {templates[slug]})')
        elif isinstance(slug, str):
            templates[slug] = f"domain_templates[{k}].slug"
        roles = template.get("roles")
        if isinstance(roles, list) and _resolve(roles, f"domain_templates[{k}].roles", batch, errors):
            for i, role in enumerate(roles):
                if role in roles[:i]:
                    errors.add(f"domain_templates[{k}].roles[{i}]", f'"{role}" is listed twice')


def _resolve(slugs: list, path: str, batch: _Batch, errors: _Errors) -> bool:
    """Report each slug that names no persona; True when every one is a string that does."""
    for i, slug in enumerate(slugs):
        if not batch.resolvable(slug):
            errors.add(f"{path}[{i}]", f'unknown persona "{slug}"')
    return all(isinstance(s, str) and s.strip() and batch.resolvable(s) for s in slugs)


def _check_ownership(data: dict, batch: _Batch, errors: _Errors) -> None:
    own = _library_slug(data)
    if own is None:
        return  # library.slug is already reported; ownership checks against it would only add noise
    if not batch.replace and own in batch.db_libraries:
        errors.add("library.slug", f'library "{own}" already exists (import with replace to update it)')
    for path, slug in _persona_slugs(data):
        stored_in = batch.db_personas.get(slug)
        if stored_in and stored_in != own and stored_in not in batch.libraries:
            errors.add(path, f'persona "{slug}" already belongs to library "{stored_in}"; slugs are unique')
    if batch.replace and own in batch.db_libraries:
        _check_removals(own, batch, errors)


def _check_removals(library_slug: str, batch: _Batch, errors: _Errors) -> None:
    """Refuse to drop a persona that libraries outside this import still point at."""
    removed = [s for s, lib in batch.db_personas.items() if lib == library_slug and s not in batch.personas]
    if not removed:
        return
    # (rows, the persona they name, the library they belong to)
    uses = (
        (CrossCritique.objects, "target__slug", "source__library__slug"),
        (PairingRule.objects, "persona_a__slug", "library__slug"),
        (PairingRule.objects, "persona_b__slug", "library__slug"),
        (DomainTemplate.roles.through.objects, "persona__slug", "domaintemplate__library__slug"),
    )
    used = set()
    for rows, persona, library in uses:
        outside = rows.filter(**{f"{persona}__in": removed}).exclude(**{f"{library}__in": batch.libraries})
        used.update(outside.values_list(persona, library))
    for slug, other in sorted(used):
        errors.add("personas", f'persona "{slug}" is missing, so it would be removed, but library "{other}" uses it')
