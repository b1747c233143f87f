"""Friendly 404 and 403 pages for Agora's own pages, with DEBUG on as well as off.

With DEBUG off Django renders templates/404.html and 403.html itself. With DEBUG on it shows its
technical pages instead, which a visitor should never meet on the app's pages (a revoked share
link is an everyday 404): this middleware renders the friendly pages there too. The admin keeps
Django's behaviour, and an address no URL matches keeps the technical page under DEBUG (it never
reaches a view, so no middleware sees it), which is what a developer wants.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render


class NotFound(Http404):
    """A 404 whose message is written for the visitor and safe to show (it reveals nothing the
    visitor does not know). A plain Http404's message is never shown: it may name internals."""


class FriendlyErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        match = getattr(request, "resolver_match", None)
        if match is not None and match.app_name == "admin":
            return None
        if isinstance(exception, Http404):
            message = str(exception) if isinstance(exception, NotFound) else ""
            return render(request, "404.html", {"message": message}, status=404)
        if isinstance(exception, PermissionDenied):
            return render(request, "403.html", status=403)
        return None
