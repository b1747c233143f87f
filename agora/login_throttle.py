"""Login throttling on django-axes: wrong passwords are counted per address and per username at an
address (never per username alone, so guesses from elsewhere cannot lock the owner out), and past
either limit a sign-in is refused by axes' backend before Django's backend runs the password
hasher, the CPU an attacker would otherwise spend on our side (about 0.3 s each)."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum
from django.shortcuts import render


class ThrottleBackend(AxesStandaloneBackend):
    """Axes' backend, which refuses a locked-out sign-in before the next backend hashes. A call
    without a request (the test client's login(), a shell) has no address to count, and axes would
    raise: it is left to the next backend. Every sign-in over the web passes its request."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


class ThrottleHandler(AxesDatabaseHandler):
    """Axes has one limit for all its lockout parameters; an address (several people behind one
    router) is allowed more failures than one username at that address."""

    def is_locked(self, request, credentials=None) -> bool:
        # In the order of AXES_LOCKOUT_PARAMETERS: username and address together, then address.
        per_name, per_address = (
            attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            for attempts in self.get_user_attempts(request, credentials)
        )
        return (
            per_name >= settings.AGORA_LOGIN_FAILURES_PER_USER_ADDRESS
            or per_address >= settings.AGORA_LOGIN_FAILURES_PER_ADDRESS
        )


def locked_out(request, *_response_and_credentials):
    """The refusal page (429), in the visitor's language. Axes calls this with the view's response
    and the credentials, or only the credentials on its async path: neither is needed here."""
    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)
