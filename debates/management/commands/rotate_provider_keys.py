"""Seal every stored provider key again with the current AGORA_KEY_ENCRYPTION_KEY.

Rotation: set the new value in AGORA_KEY_ENCRYPTION_KEY and the old one in
AGORA_KEY_ENCRYPTION_KEY_FALLBACKS (comma-separated; or `--old`), restart, run this command, then
drop the fallback. Keys stay readable throughout (MultiFernet opens with any of them).
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test import override_settings

from debates import key_vault
from debates.models import Provider


class Command(BaseCommand):
    help = "Re-encrypt the provider keys stored by Connect a model with the current AGORA_KEY_ENCRYPTION_KEY."

    def add_arguments(self, parser):
        parser.add_argument(
            "--old",
            action="append",
            default=[],
            metavar="VALUE",
            help="a previous AGORA_KEY_ENCRYPTION_KEY (repeatable), besides AGORA_KEY_ENCRYPTION_KEY_FALLBACKS; "
            "prefer the variable: a command line shows in the process list",
        )

    def handle(self, *args, old, **options):
        from django.conf import settings

        fallbacks = [*settings.AGORA_KEY_ENCRYPTION_KEY_FALLBACKS, *old]
        if not old and not fallbacks:
            self.stdout.write("No old key given (AGORA_KEY_ENCRYPTION_KEY_FALLBACKS or --old): sealing again anyway.")
        failed = []
        with override_settings(AGORA_KEY_ENCRYPTION_KEY_FALLBACKS=fallbacks), transaction.atomic():
            rows = list(Provider.objects.select_for_update().exclude(api_key_sealed=""))
            for provider in rows:
                try:
                    provider.api_key_sealed = key_vault.rotate(provider.api_key_sealed)
                except key_vault.VaultError:
                    failed.append(provider.name)
                    continue
                provider.save(update_fields=["api_key_sealed"])
        if failed:
            raise CommandError(
                f"{len(failed)} key(s) could not be opened with any given key ({', '.join(failed)}); the others "
                f"were re-encrypted. Give the old key with --old, or enter those keys again on Connect a model."
            )
        self.stdout.write(self.style.SUCCESS(f"{len(rows)} stored key(s) re-encrypted with the current key."))
