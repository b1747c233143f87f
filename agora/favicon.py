"""/favicon.ico: browsers ask for it on a first visit whatever the page names, and a 404 there filled the log
and left the tab without an icon. It answers static/favicon.svg (modern browsers read SVG at any address)."""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET


@cache
def _icon() -> bytes:
    return (settings.BASE_DIR / "static" / "favicon.svg").read_bytes()


@require_GET
@cache_control(public=True, max_age=86400)
def favicon(request):
    return HttpResponse(_icon(), content_type="image/svg+xml")
