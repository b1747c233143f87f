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


@register(Tags.security, deploy=False)
def key_encryption_settings(app_configs, **kwargs):
    """The key that encrypts provider keys entered on the Connect a model page."""
    from django.core.checks import Error

    problems = []
    current = settings.AGORA_KEY_ENCRYPTION_KEY
    if current and current in {settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())}:
        problems.append(
            Error(
                "AGORA_KEY_ENCRYPTION_KEY is SECRET_KEY: the provider keys must not open with the session secret.",
                hint="Set AGORA_KEY_ENCRYPTION_KEY to another long random value (docs/production.md).",
                id="agora.E005",
            )
        )
    sqlite = settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
    if not current and (not sqlite or not settings.DEBUG):
        from debates.key_vault import key_file

        problems.append(
            Warning(
                f"AGORA_KEY_ENCRYPTION_KEY is not set: provider keys entered on Connect a model are encrypted "
                f"with a key generated into {key_file()}, which other machines (and a new container) lack.",
                hint='Set AGORA_KEY_ENCRYPTION_KEY to a long random value (python -c "import secrets; '
                'print(secrets.token_urlsafe(50))") on every process, and keep it with the database backups.',
                id="agora.W004",
            )
        )
    return problems


RUNNERS = ("inprocess", "worker")


@register(deploy=False)
def runner_settings(app_configs, **kwargs):
    """Where debates run (AGORA_RUNNER) and what that needs."""
    from django.core.checks import Error

    problems = []
    if settings.AGORA_RUNNER not in RUNNERS:
        problems.append(
            Error(
                f"AGORA_RUNNER={settings.AGORA_RUNNER!r} is not a runner Agora knows.",
                hint="Use AGORA_RUNNER=inprocess (debates run in the web process, the default) or "
                "AGORA_RUNNER=worker (they run in `manage.py agora_worker` processes).",
                id="agora.E001",
            )
        )
    elif settings.AGORA_RUNNER == "worker":
        if not settings.REDIS_URL:
            problems.append(
                Error(
                    "AGORA_RUNNER=worker without REDIS_URL: viewers would never see a worker's tokens.",
                    hint="Set REDIS_URL (e.g. redis://127.0.0.1:6379/0) so frames travel from the workers "
                    "to every web process, or use AGORA_RUNNER=inprocess.",
                    id="agora.E002",
                )
            )
        if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
            problems.append(
                Warning(
                    "AGORA_RUNNER=worker on SQLite: workers on other machines cannot share this database.",
                    hint="Set DATABASE_URL to a PostgreSQL database shared by the web processes and workers.",
                    id="agora.W003",
                )
            )
    if settings.AGORA_PROCESSES > 1 and settings.AGORA_RUNNER == "inprocess" and not settings.REDIS_URL:
        problems.append(
            Error(
                f"AGORA_PROCESSES={settings.AGORA_PROCESSES} without REDIS_URL: a viewer whose page landed on "
                "one process would never see the tokens of a debate another process runs.",
                hint="Set REDIS_URL (e.g. redis://127.0.0.1:6379/0), or serve one process (`make run`).",
                id="agora.E006",
            )
        )
    if settings.AGORA_PAGE_THREADS < 0:
        problems.append(
            Error(
                f"AGORA_PAGE_THREADS={settings.AGORA_PAGE_THREADS}: a count of threads cannot be negative.",
                hint="Use 2 (the default), another small number, or 0 for Django's own thread per request.",
                id="agora.E007",
            )
        )
    return problems


@register(deploy=False)
def search_settings(app_configs, **kwargs):
    """The environment's search backend (AGORA_SEARCH_*) and the networks pages may come from."""
    from django.core.checks import Error

    from debates import search_clients
    from debates.search.addresses import parse_networks

    problems = []
    if settings.AGORA_SEARCH_BACKEND:
        try:
            search_clients.check()
        except search_clients.SearchMisconfigured as error:
            problems.append(
                Error(
                    str(error),
                    hint="AGORA_SEARCH_BACKEND=searxng needs AGORA_SEARCH_URL (your SearxNG, JSON output on); "
                    "=brave needs AGORA_SEARCH_KEY_VAR naming a set variable, e.g. BRAVE_API_KEY. Or unset "
                    "AGORA_SEARCH_BACKEND: debates then skip research and say so.",
                    id="agora.E003",
                )
            )
    try:
        parse_networks(settings.AGORA_FETCH_ALLOWED_NETWORKS)
    except ValueError as error:
        problems.append(
            Error(str(error), hint="Comma-separated CIDRs, e.g. 10.0.0.0/8,192.168.1.0/24.", id="agora.E004")
        )
    return problems


@register(deploy=False)
def optional_packages(app_configs, **kwargs):
    """The heavy packages imported only where they are used (`debates.engine.optional`): without one,
    only its part fails, and says so; named here so that whoever runs the server hears it first."""
    from debates.engine import optional

    return [
        Warning(
            f"The Python package {spec.package} is not installed: {spec.without}.",
            hint=f"Install the locked requirements: {optional.INSTALL} (make venv does).",
            id="agora.W005",
        )
        for spec in optional.missing()
    ]
