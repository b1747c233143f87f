"""Every defect of a manifest, in three passes: the document's shape (schema.py), each row against
its Django model (rows.py), and what rows say about each other and the database (references.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from personas.manifest.errors import ManifestError, path_of
from personas.manifest.references import reference_errors
from personas.manifest.rows import row_errors
from personas.manifest.schema import schema_errors


def validate_manifests(manifests: Sequence[Any], *, replace: bool = True) -> list[list[ManifestError]]:
    """Validate manifests meant to be imported together (they may refer to each other's personas)."""
    result = []
    for data, references in zip(manifests, reference_errors(manifests, replace), strict=True):
        shape = schema_errors(data)
        errors = [ManifestError(path_of(location), message) for location, message in shape]
        errors += row_errors(data, {location for location, _message in shape})
        # Once each (two checks can agree on a field), in document order.
        result.append(sorted(dict.fromkeys(errors + references), key=ManifestError.sort_key))
    return result


def validate_manifest(data: Any, *, replace: bool = True) -> list[ManifestError]:
    """Every defect of one manifest against the current database; [] when it would import."""
    return validate_manifests([data], replace=replace)[0]
