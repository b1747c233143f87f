"""A manifest's defects, each named by the manifest path of the offending field."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

ROOT = "$"  # path of errors about the document as a whole (malformed JSON, wrong top-level type)


@dataclass(frozen=True)
class ManifestError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def sort_key(self) -> tuple:
        # Document order, with list indices compared as numbers (personas[2] before personas[10]).
        parts = re.split(r"[.\[\]]+", self.path)
        return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p)


class ManifestInvalid(Exception):
    """A manifest was refused. `errors` lists every defect; nothing was written."""

    def __init__(self, errors: Iterable[ManifestError], per_manifest: list[list[ManifestError]] | None = None):
        self.errors = list(errors)
        self.per_manifest = per_manifest if per_manifest is not None else [self.errors]
        super().__init__("\n".join(str(e) for e in self.errors))


def path_of(location: Iterable[str | int]) -> str:
    """("personas", 3, "name") -> "personas[3].name"; the empty location is the document, "$"."""
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location)
    return path.lstrip(".") or ROOT


def type_name(value) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    return names.get(type(value), "an object")
