"""Which environment variables a Provider row may name as its API key.

A provider sends its key as `Authorization: Bearer …` to its own base URL, which whoever edits the
row chooses. So the variable must come from a list the operator controls
(`AGORA_PROVIDER_KEY_VARS`: shell-style patterns, default `*_API_KEY`, each optionally bound to
hosts as `NAME@host1|host2`), and the server's own secrets can never be named, nor any variable
that holds the same value as one of them. The default provider's key (`OPENAI_API_KEY`) goes only
to its own origin (`OPENAI_BASE_URL`'s, or `OPENAI_API_KEY_HOSTS`), by name or by value.

A binding is an origin, as for a key stored by Connect a model (debates/key_vault.py): scheme, host
and port. A bare host means https on 443; `http://10.0.0.5:8000` names another scheme or port.
"""

from __future__ import annotations

import fnmatch
import os
import re

from django.conf import settings
from django.utils.translation import gettext as _

from debates.key_vault import origin

# Never a provider key, whatever the patterns say: Django's and Agora's own credentials.
NEVER = ("SECRET_KEY", "DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "AGORA_TEST_POSTGRES", "AGORA_TEST_REDIS")
VARIABLE_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
NEVER_PARTS = ("SECRET_KEY", "PASSWORD", "DATABASE", "REDIS", "POSTGRES", "SESSION", "CSRF")
DEFAULT_KEY = "OPENAI_API_KEY"
OPENAI_ORIGIN = "https://api.openai.com:443"


def bound_origin(entry: str) -> str:
    """The origin a binding names: a bare host (or host:port) is https; "*" stays "*"."""
    entry = entry.strip().lower()
    if entry == "*":
        return entry
    return origin(entry if "://" in entry else f"https://{entry}") or entry


def default_key_hosts() -> tuple[str, ...]:
    """The origins the default provider's key may go to ("*": anywhere)."""
    hosts = tuple(bound_origin(h) for h in settings.OPENAI_API_KEY_HOSTS)
    if hosts:
        return hosts
    return (origin(settings.OPENAI_BASE_URL) or OPENAI_ORIGIN,)


def _default_key_refused(name: str, base_url: str) -> str:
    hosts = default_key_hosts()
    if "*" in hosts or origin(base_url) in hosts:
        return ""
    return _(
        "%(name)s is the default provider's key: it is sent only to %(hosts)s (OPENAI_BASE_URL's host, "
        "or OPENAI_API_KEY_HOSTS)."
    ) % {"name": name, "hosts": ", ".join(hosts)}


def allowed_patterns() -> list[tuple[str, tuple[str, ...]]]:
    """(pattern, origins) pairs; no origins means anywhere."""
    pairs = []
    for entry in settings.AGORA_PROVIDER_KEY_VARS:
        pattern, _sep, hosts = entry.partition("@")
        pairs.append((pattern.strip(), tuple(bound_origin(h) for h in hosts.split("|") if h.strip())))
    return pairs


def describe_allowed() -> str:
    return ", ".join(settings.AGORA_PROVIDER_KEY_VARS) or "—"


def _server_secrets() -> set[str]:
    values = {settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())}
    values |= {db.get("PASSWORD", "") for db in settings.DATABASES.values()}
    values |= {os.environ.get(name, "") for name in NEVER}
    values.add(getattr(settings, "REDIS_URL", ""))
    return {v for v in values if v}


def problem(name: str, base_url: str = "") -> str:
    """Why `name` may not be this provider's key variable, or "" if it may."""
    if not name:
        return ""
    if not VARIABLE_NAME.fullmatch(name):
        # Never echo it: what lands here is often the key itself, pasted by mistake.
        return _("Name the environment variable that holds the key (capitals, digits, _), never the key itself.")
    listed = _("The key variables this server allows: %(allowed)s (AGORA_PROVIDER_KEY_VARS).") % {
        "allowed": describe_allowed()
    }
    if name in NEVER or any(part in name for part in NEVER_PARTS):
        return _("%(name)s holds a secret of this server and can never be a provider key.") % {"name": name} + (
            " " + listed
        )
    host = origin(base_url)
    matching = [hosts for pattern, hosts in allowed_patterns() if fnmatch.fnmatchcase(name, pattern)]
    if not matching:
        return _("%(name)s is not a key variable this server allows.") % {"name": name} + " " + listed
    if all(hosts and host not in hosts for hosts in matching):
        bound = sorted({h for hosts in matching for h in hosts})
        return _("%(name)s may only be sent to %(hosts)s.") % {"name": name, "hosts": ", ".join(bound)} + (" " + listed)
    if name == DEFAULT_KEY:
        return _default_key_refused(name, base_url)
    return ""


def read(name: str, base_url: str) -> tuple[str | None, str]:
    """(the key, "") when the variable may be sent to `base_url`; (None, why not) otherwise. An
    allowed name that holds one of the server's own secrets is refused too."""
    why = problem(name, base_url)
    if why:
        return None, why
    value = os.environ.get(name) if name else None
    if value and value in _server_secrets():
        return None, _(
            "%(name)s holds the same value as a secret of this server; it is never sent to a provider "
            "(AGORA_PROVIDER_KEY_VARS)."
        ) % {"name": name}
    if value and name != DEFAULT_KEY and value == os.environ.get(DEFAULT_KEY):
        # Another name for the default key goes no further than the default key itself.
        why = _default_key_refused(name, base_url)
        if why:
            return None, why
    return value, ""
