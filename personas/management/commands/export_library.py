"""manage.py export_library SLUG [-o FILE]: write a library as its JSON manifest."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from personas.manifest.io import export_library
from personas.manifest.text import dump_manifest
from personas.models import Library


class Command(BaseCommand):
    help = "Export a persona library as a JSON manifest (standard output unless -o is given)."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the library's slug")
        parser.add_argument("-o", "--output", help="write to this file instead of standard output")

    def handle(self, *args, **options):
        try:
            library = Library.objects.get(slug=options["slug"])
        except Library.DoesNotExist:
            known = ", ".join(Library.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f'no library "{options["slug"]}" (known: {known})') from None
        text = dump_manifest(export_library(library))
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
