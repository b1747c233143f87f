"""The installation's own state: the one-time link that creates its first account."""

import hashlib
import secrets

from django.db import models


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SetupToken(models.Model):
    """While no account exists, `manage.py setup_link` (run by `make run`) makes one of these and
    prints its link; opening it creates the first account (`agora.setup`). Only a hash is stored,
    so reading the database does not give the link away; a new link replaces the old one."""

    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"setup link of {self.created_at:%Y-%m-%d %H:%M}"

    @classmethod
    def issue(cls) -> str:
        cls.objects.all().delete()
        token = secrets.token_urlsafe(32)
        cls.objects.create(digest=_digest(token))
        return token

    @classmethod
    def claim(cls, token: str) -> bool:
        """Spend the link: true for exactly one of any number of simultaneous claims. One DELETE
        decides (PostgreSQL makes a second one wait for the first's commit, then finds no row;
        SQLite runs one write transaction at a time), so call it inside the transaction whose work
        the link allows: if that work fails, the link is not spent."""
        if not token:
            return False
        deleted, _ = cls.objects.filter(digest=_digest(token)).delete()
        return deleted == 1
