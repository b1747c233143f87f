"""API tokens: made with a random secret, kept only as its SHA-256, checked on every API call."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import get_language, get_supported_language_variant, gettext

from debates.models import ApiToken

# Recognisable in a leaked log or a secret scanner, and shown (with a few more characters) as the
# token's prefix in lists.
SCHEME = "agora_"
PREFIX_LENGTH = len(SCHEME) + 6
# A write per call would contend with the running debates' writes (SQLite has one writer):
# "last used" is exact to a minute.
TOUCH_EVERY = timedelta(minutes=1)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return SCHEME + secrets.token_urlsafe(32)


def fill(row: ApiToken) -> str:
    """Give an unsaved row a fresh token's digest and prefix; the token, to show once."""
    token = new_token()
    row.digest, row.prefix = digest(token), token[:PREFIX_LENGTH]
    return token


def issue(user, name: str, language: str | None = None, *, read_only: bool = False) -> tuple[ApiToken, str]:
    """A new token for `user`; the API answers it in `language` (default: the language in force,
    the one its owner reads the site in) when a request asks for none. `read_only`: it reads and
    follows debates but cannot start, stop or delete one (a dashboard's, an MCP client's)."""
    row = ApiToken(
        user=user,
        name=name,
        language=language if language is not None else (get_language() or ""),
        read_only=read_only,
    )
    token = fill(row)
    row.save()
    return row, token


def user_for(token: str):
    """The active user a live (not revoked) token belongs to, or None."""
    row = row_for(token)
    return row.user if row is not None else None


def row_for(token: str) -> ApiToken | None:
    """The live (not revoked) token row of an active user, its user loaded, or None."""
    if not token or not token.startswith(SCHEME):
        return None
    row = ApiToken.objects.select_related("user").filter(digest=digest(token), revoked_at__isnull=True).first()
    if row is None or not row.user.is_active:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


def asks_for_language(request) -> bool:
    """Does the request say which language it reads (Accept-Language, or the site's language cookie)?"""
    return bool(request.headers.get("Accept-Language", "").strip()) or settings.LANGUAGE_COOKIE_NAME in request.COOKIES


def language_for(request, row: ApiToken) -> str | None:
    """The language the API answers `request` in when it is not the request's own: the token's
    (its owner's language when it was made), if the request asks for none and it is one the site speaks."""
    if asks_for_language(request) or not row.language:
        return None
    try:
        return get_supported_language_variant(row.language)
    except LookupError:
        return None


@dataclass(frozen=True)
class Caller:
    """Who a request at a program's door (the OpenAI-compatible chat, MCP) acts as: a live API
    token's user, the token, and the language to answer in (None: the request's own, which the
    request machinery already made active). `site`: the server's address, for links (empty over
    MCP's stdio: links are then paths)."""

    user: Any
    language: str | None
    token: str
    site: str = ""
    read_only: bool = False


def caller_for(token: str, *, request=None, site: str = "") -> Caller | None:
    """The caller `token` opens the door to, or None (unknown, revoked, its user inactive). With
    a `request`, its own language wins (`language_for`); without one (stdio) the token's
    language, else the site's."""
    row = row_for(token) if token else None
    if row is None:
        return None
    if request is not None:
        language = language_for(request, row)
    else:
        try:
            language = get_supported_language_variant(row.language) if row.language else settings.LANGUAGE_CODE
        except LookupError:
            language = settings.LANGUAGE_CODE
    return Caller(row.user, language, token, site, row.read_only)


def is_live(token: str) -> bool:
    """Does `token` still open the API (not revoked, its user active)? Asked by open streams."""
    return ApiToken.objects.filter(digest=digest(token), revoked_at__isnull=True, user__is_active=True).exists()


def revoke(user, pk: int) -> bool:
    return bool(revoke_all(ApiToken.objects.filter(user=user, pk=pk)))


def revoke_all(queryset) -> int:
    """Revoke the live tokens among `queryset` (a revoked one keeps its first revocation time)."""
    return queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def read_only_refusal() -> str:
    """What a read-only token hears when it asks to change something, at every door."""
    return gettext("This API token is read-only: it cannot start, stop or delete debates. Make a full one to do that.")
