"""The bundled personas' English names (the libraries' `name_en`) in a database loaded before
they had them. `load_libraries` (make run, the Procfile's release) writes them too; this fills
only blank ones, so a database that is migrated and not reloaded has them as well, before the
debates' own migration copies them onto the turns already spoken."""

import json
from pathlib import Path

from django.db import migrations

LIBRARIES = Path(__file__).resolve().parent.parent / "libraries"


def bundled_names() -> dict[str, str]:
    names = {}
    for path in sorted(LIBRARIES.glob("*.json")):
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for persona in manifest.get("personas", []):
            if isinstance(persona, dict) and persona.get("slug") and persona.get("name_en"):
                names[persona["slug"]] = persona["name_en"]
    return names


def fill(apps, schema_editor):
    Persona = apps.get_model("personas", "Persona")
    for slug, name_en in bundled_names().items():
        Persona.objects.filter(slug=slug, name_en="").update(name_en=name_en)


class Migration(migrations.Migration):
    dependencies = [
        ("personas", "0004_persona_name_en"),
    ]

    operations = [
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
