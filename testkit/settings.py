"""The settings of the real Agora processes the tests start (daphne, `manage.py serve`, workers):
agora/settings.py with one change. Django's default password hasher spends about a quarter of a
second of CPU on each sign-in by design; the browser tests sign in a few hundred times on two
cores, so their servers hash as the in-process tests do (`fast_passwords` in tests/conftest.py)."""

from django.conf import global_settings

from agora.settings import *  # noqa: F403 - everything else exactly as a user runs it

# Django's own hashers stay behind it: a password another process set still verifies.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", *global_settings.PASSWORD_HASHERS]
