"""A Content-Security-Policy header on every response, from `settings.SECURE_CSP`.

Django 6 ships this (`django.middleware.csp.ContentSecurityPolicyMiddleware`, same setting name and
shape); on Django 5.2 this small middleware stands in, so moving up means swapping one line of
MIDDLEWARE.
"""

from django.conf import settings
from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"


def policy(directives: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} {' '.join(values)}".strip() for name, values in directives.items())


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    def process_response(self, request, response):
        directives = getattr(settings, "SECURE_CSP", None)
        if directives and HEADER not in response:
            response[HEADER] = policy(directives)
        return response
