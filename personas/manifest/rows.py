"""Each manifest row checked by its Django model: lengths, choices, slugs, blank fields, the models'
own clean() (purity, hosts without tier or veto, density, rounds within the library's maximum) and
their check constraints. Rows are unsaved instances; references between rows are references.py's."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models

from personas.manifest.errors import ManifestError, path_of
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona

Location = tuple[str | int, ...]


def row_errors(data: Any, refused: set[Location]) -> list[ManifestError]:
    """Model errors of every row; a field the schema refused (at a location in `refused`) is left out."""
    if not isinstance(data, dict):
        return []
    check = _RowCheck(refused)
    library = Library()  # the fallback maximum rounds for pairing rules when the library is refused
    if isinstance(data.get("library"), dict):
        library = check(Library, data["library"], ("library",))
    for i, persona in rows_of(data, "personas"):
        check(Persona, persona, ("personas", i))
        for j, critique in rows_of(persona, "cross_critique"):
            check(CrossCritique, critique, ("personas", i, "cross_critique", j))
    for k, rule in rows_of(data, "pairing_rules"):
        check(PairingRule, rule, ("pairing_rules", k), library=library)
    for k, template in rows_of(data, "domain_templates"):
        check(DomainTemplate, template, ("domain_templates", k))
    return check.errors


def rows_of(container: Any, key: str) -> list[tuple[int, dict]]:
    """(index, row) of the objects listed under `key`; whatever is not a list or an object is the schema's."""
    rows = container.get(key) if isinstance(container, dict) else None
    return [(i, row) for i, row in enumerate(rows) if isinstance(row, dict)] if isinstance(rows, list) else []


class _RowCheck:
    def __init__(self, refused: set[Location]):
        self.refused = refused
        self.errors: list[ManifestError] = []

    def __call__(self, model: type[models.Model], row: dict, location: Location, **related) -> models.Model:
        n = len(location)
        refused = {loc[n] for loc in self.refused if len(loc) > n and loc[:n] == location}
        columns = {f.name for f in model._meta.concrete_fields if not f.is_relation}
        given = {k: v for k, v in row.items() if k in columns and k not in refused}
        instance = model(**given, **related)
        try:
            # Only what the manifest gave: the rest is a default, a relation, or a uniqueness that
            # references.py checks across the whole batch.
            instance.full_clean(exclude={f.name for f in model._meta.fields} - set(given), validate_unique=False)
        except ValidationError as exc:
            self.errors += _manifest_errors(exc, path_of(location))
        return instance


def _manifest_errors(exc: ValidationError, path: str) -> list[ManifestError]:
    errors = []
    for field, field_errors in exc.error_dict.items():
        where = path if field == NON_FIELD_ERRORS else f"{path}.{field}"
        for error in field_errors:
            # A list field's error may say which item it is about (purity of one keyword).
            item = (error.params or {}).get("item")
            errors.append(ManifestError(where if item is None else f"{where}[{item}]", " ".join(error.messages)))
    return errors
