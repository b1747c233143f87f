"""`Authorization: Bearer <token>` for every API operation (tokens: `debates.api.tokens`)."""

from __future__ import annotations

from ninja.security import HttpBearer

from debates.api import tokens


class BearerToken(HttpBearer):
    def authenticate(self, request, token):
        user = tokens.user_for(token)
        if user is not None:
            # The access rules (debates.access) read request.user, as the web views do.
            request.user = user
            request.api_token = token  # open streams ask again whether it still opens the API
        return user
