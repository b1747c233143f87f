"""`manage.py setup_link`: while no account exists, print a one-time link that creates the first
one (`make run` runs this before serving)."""

from django.core.management.base import BaseCommand
from django.urls import reverse

from agora.models import SetupToken
from agora.setup import no_account_yet


class Command(BaseCommand):
    help = "Print a one-time link that creates the first (superuser) account, while none exists."

    def add_arguments(self, parser):
        parser.add_argument("--base", default="http://127.0.0.1:8000", help="the address the app is served at")

    def handle(self, *args, **options):
        base = options["base"].rstrip("/")
        if not no_account_yet():
            self.stdout.write(f"Accounts exist: log in at {base}/accounts/login/")
            return
        # The code after "#": a browser never sends it, so no access log ever holds it.
        page, code = base + reverse("setup"), SetupToken.issue()
        link = f"{page}#{code}"
        bar = "=" * min(100, len(link) + 4)
        self.stdout.write(
            f"\n{bar}\n  No account yet. Open this one-time link to create the first account:\n\n"
            f"  {link}\n\n  (Or open {page} and enter the code {code}\n"
            f"  It works once; `.venv/bin/python manage.py setup_link` prints a new one.)\n{bar}\n"
        )
