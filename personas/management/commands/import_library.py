"""manage.py import_library FILE: import one library manifest, all or nothing."""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, no_translations

from personas.manifest.errors import ManifestInvalid
from personas.manifest.io import import_manifest
from personas.manifest.text import parse_manifest
from personas.models import Persona


class Command(BaseCommand):
    help = "Import a persona library from a JSON manifest (docs/manifest.md); a refused one changes nothing."

    def add_arguments(self, parser):
        parser.add_argument("file", help="path of the manifest, or - for standard input")
        parser.add_argument(
            "--no-replace",
            action="store_true",
            help="refuse the manifest if its library already exists instead of updating it in place",
        )

    @no_translations  # the model's messages in English, like every other line these commands print
    def handle(self, *args, **options):
        try:
            data = parse_manifest(self._read(options["file"]))
            # Recorded as imported, whatever the file says (the roundtable seed's external-import).
            result = import_manifest(data, replace=not options["no_replace"], source=Persona.Source.EXTERNAL)
        except ManifestInvalid as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"manifest refused ({len(exc.errors)} errors); nothing was changed") from exc
        self.stdout.write(self.style.SUCCESS(result.summary()))

    def _read(self, name: str) -> bytes:
        if name == "-":
            return sys.stdin.buffer.read()
        try:
            return Path(name).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {name}: {exc.strerror}") from exc
