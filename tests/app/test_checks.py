"""The system checks name an unsafe production setting and its fix."""

from django.core.checks import run_checks

from agora.settings import DEFAULT_SECRET_KEY


def ids() -> set[str]:
    return {message.id for message in run_checks(tags=["security"])}


def test_debug_with_a_public_host_warns(settings):
    settings.DEBUG = True
    settings.ALLOWED_HOSTS = ["agora.example.org"]
    settings.SECRET_KEY = "x" * 50
    messages = [m for m in run_checks(tags=["security"]) if m.id == "agora.W001"]
    assert messages and "DEBUG=0" in messages[0].hint


def test_default_secret_key_in_production_warns(settings):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["agora.example.org"]
    settings.SECRET_KEY = DEFAULT_SECRET_KEY
    messages = [m for m in run_checks(tags=["security"]) if m.id == "agora.W002"]
    assert messages and "SECRET_KEY" in messages[0].hint


def test_local_development_is_quiet(settings):
    settings.DEBUG = True
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
    settings.SECRET_KEY = DEFAULT_SECRET_KEY
    assert not {"agora.W001", "agora.W002"} & ids()
