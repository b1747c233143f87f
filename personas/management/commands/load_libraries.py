"""manage.py load_libraries: import every bundled manifest; safe to run again (make run does)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, no_translations

from personas.manifest.errors import ManifestInvalid
from personas.manifest.io import BUNDLED_DIR, bundled_manifest_paths, load_library_files


class Command(BaseCommand):
    help = "Load the bundled persona libraries (personas/libraries/*.json), updating them in place."

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=str(BUNDLED_DIR), help="directory of *.json manifests")

    @no_translations  # the model's messages in English, like every other line these commands print
    def handle(self, *args, **options):
        paths = bundled_manifest_paths(Path(options["dir"]))
        if not paths:
            self.stdout.write(f"no library manifests in {options['dir']}; nothing to load")
            return
        try:
            # One batch: libraries may critique each other's personas, whatever the file order.
            results = load_library_files(paths)
        except ManifestInvalid as exc:
            if len(exc.per_manifest) == len(paths):
                for path, errors in zip(paths, exc.per_manifest, strict=True):
                    for error in errors:
                        self.stderr.write(f"{path.name}: {error}")
            else:  # refused while writing, not attributable to one file
                for error in exc.errors:
                    self.stderr.write(str(error))
            raise CommandError(f"libraries refused ({len(exc.errors)} errors); nothing was changed") from exc
        for path, result in zip(paths, results, strict=True):
            self.stdout.write(f"{path.name}: {result.summary()}")
        self.stdout.write(self.style.SUCCESS(f"loaded {len(results)} libraries"))
