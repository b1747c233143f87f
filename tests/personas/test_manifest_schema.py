"""docs/manifest.md publishes the JSON Schema of the importer's pydantic model; the two must not drift."""

import json
import re
from pathlib import Path

from django.conf import settings

from personas.manifest.schema import Manifest

DOC = Path(settings.BASE_DIR) / "docs" / "manifest.md"


def test_the_published_schema_is_the_one_the_code_generates():
    block = re.search(r"<!-- schema -->\n```json\n(.*?)\n```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert block, "docs/manifest.md has lost its generated JSON Schema block"
    assert json.loads(block.group(1)) == Manifest.model_json_schema(), (
        "docs/manifest.md is out of date; regenerate it with "
        '`python manage.py shell -c "from personas.manifest.schema import schema_json; print(schema_json())"`'
    )
