"""`Authorization: Bearer <token>` for every API operation (tokens: `debates.api.tokens`)."""

from __future__ import annotations

from django.utils import translation
from ninja.errors import HttpError
from ninja.security import HttpBearer

from debates.api import tokens


class BearerToken(HttpBearer):
    def authenticate(self, request, token):
        row = tokens.row_for(token)
        if row is None:
            return None
        # Every operation that changes something is a POST or a DELETE; reading is GET.
        if row.read_only and request.method not in ("GET", "HEAD", "OPTIONS"):
            raise HttpError(403, tokens.read_only_refusal())
        # The access rules (debates.access) read request.user, as the web views do.
        request.user = row.user
        request.api_token = token  # open streams ask again whether it still opens the API
        # A request that asks for no language is answered in the token owner's (the one in force
        # when the token was made). A sync operation runs in this thread and context; an async
        # one (the stream) reads request.api_language.
        request.api_language = tokens.language_for(request, row)
        if request.api_language:
            translation.activate(request.api_language)
            request.LANGUAGE_CODE = request.api_language
        return row.user
