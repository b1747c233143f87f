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


def test_an_unknown_runner_is_an_error(settings):
    settings.AGORA_RUNNER = "celery"
    messages = [m for m in run_checks() if m.id == "agora.E001"]
    assert messages and "AGORA_RUNNER=inprocess" in messages[0].hint


def test_workers_need_redis_and_should_not_share_sqlite(settings):
    settings.AGORA_RUNNER = "worker"
    settings.REDIS_URL = ""
    found = {m.id: m for m in run_checks()}
    assert "agora.E002" in found and "REDIS_URL" in found["agora.E002"].hint
    assert "agora.W003" in found and "PostgreSQL" in found["agora.W003"].hint
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert "agora.E002" not in {m.id for m in run_checks()}


def test_the_default_runner_is_quiet(settings):
    settings.AGORA_RUNNER = "inprocess"
    assert not {"agora.E001", "agora.E002", "agora.W003"} & {m.id for m in run_checks()}


def test_a_yes_no_variable_with_an_unknown_value_stops_start_up(monkeypatch):
    import pytest
    from django.core.exceptions import ImproperlyConfigured

    from agora.settings import env_bool

    monkeypatch.setenv("AGORA_TEST_FLAG", "flase")
    with pytest.raises(ImproperlyConfigured, match="AGORA_TEST_FLAG='flase'"):
        env_bool("AGORA_TEST_FLAG", False)
    for word, value in (("Yes", True), ("off", False), ("1", True), ("", False)):
        monkeypatch.setenv("AGORA_TEST_FLAG", word)
        assert env_bool("AGORA_TEST_FLAG", not value) is value


def test_a_search_backend_without_what_it_needs_is_an_error(settings, monkeypatch):
    settings.AGORA_SEARCH_BACKEND = "searxng"
    settings.AGORA_SEARCH_URL = ""
    messages = [m for m in run_checks() if m.id == "agora.E003"]
    assert messages and "SearxNG needs its address" in messages[0].msg

    settings.AGORA_SEARCH_BACKEND = "brave"
    settings.AGORA_SEARCH_KEY_VAR = "BRAVE_API_KEY"
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    messages = [m for m in run_checks() if m.id == "agora.E003"]
    assert messages and "set BRAVE_API_KEY" in messages[0].msg

    monkeypatch.setenv("BRAVE_API_KEY", "k")
    assert not [m for m in run_checks() if m.id == "agora.E003"]


def test_a_fetch_network_that_is_not_a_cidr_is_an_error(settings):
    settings.AGORA_FETCH_ALLOWED_NETWORKS = ["10.0.0.0/8", "intranet"]
    messages = [m for m in run_checks() if m.id == "agora.E004"]
    assert messages and "'intranet'" in messages[0].msg
    settings.AGORA_FETCH_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert not [m for m in run_checks() if m.id == "agora.E004"]
