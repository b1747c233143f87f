"""A bundled persona library (personas/libraries/*.json) as the engine gets it, without a
database: each persona's full text as `Persona.persona_text` writes it. For engine tests and
benchmarks that run a format on the library users get."""

from __future__ import annotations

import json
from pathlib import Path

LIBRARIES = Path(__file__).resolve().parents[1] / "personas" / "libraries"


def bundled(name: str):
    """The library `personas/libraries/<name>.json` as a `LibrarySpec` (its host apart)."""
    from debates.engine.spec import LibrarySpec, PersonaSpec
    from personas.models import Persona  # its text builder only: no database is touched

    data = json.loads((LIBRARIES / f"{name}.json").read_text(encoding="utf-8"))
    specs = []
    for p in data["personas"]:
        fields = {f: p.get(f, "") for f in Persona.TEXT_FIELDS}
        specs.append(
            PersonaSpec(
                slug=p["slug"],
                name=p["name"],
                name_en=p.get("name_en", ""),
                kind=p["kind"],
                tier=p.get("tier", ""),
                role=p.get("role", ""),
                keywords=tuple(p.get("keywords", ())),
                text=Persona(**fields).persona_text(),
            )
        )
    host = next((s for s in specs if s.kind == "host"), None)
    return LibrarySpec(pool=[s for s in specs if s.kind == "debater"], host=host)
