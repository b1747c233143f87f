"""System checks that name an unsafe production setting and how to fix it."""

from django.conf import settings
from django.core.checks import Tags, Warning, register

LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


@register(Tags.security, deploy=False)
def unsafe_production_settings(app_configs, **kwargs):
    from agora.settings import DEFAULT_SECRET_KEY

    warnings = []
    public_hosts = [host for host in settings.ALLOWED_HOSTS if host not in LOCAL_HOSTS]
    if settings.DEBUG and public_hosts:
        warnings.append(
            Warning(
                f"DEBUG is on while ALLOWED_HOSTS admits {', '.join(public_hosts)}.",
                hint="Set DEBUG=0 in the environment before serving anyone but yourself.",
                id="agora.W001",
            )
        )
    if settings.SECRET_KEY == DEFAULT_SECRET_KEY and (public_hosts or not settings.DEBUG):
        warnings.append(
            Warning(
                "SECRET_KEY is the public development default.",
                hint="Set SECRET_KEY to a long random value, e.g. the output of python -c "
                '"import secrets; print(secrets.token_urlsafe(50))".',
                id="agora.W002",
            )
        )
    return warnings
