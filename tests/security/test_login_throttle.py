"""Login throttling (hardening round three): 120 wrong passwords in a row were all tried, each one
running the password hasher (295 ms of daphne's CPU apiece). Past the limit an address is refused
before any hashing, and the owner signing in from another address is not locked out by it."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client

from tests.security.conftest import english_client

pytestmark = pytest.mark.django_db

ATTACKER = "127.0.0.2"
OWNER = "127.0.0.3"


class CountingHasher(MD5PasswordHasher):
    """Counts what costs CPU in a real hasher: each password hashed, to store or to compare."""

    algorithm = "counting_md5"
    calls = 0

    def encode(self, password, salt):
        type(self).calls += 1
        return super().encode(password, salt)


@pytest.fixture
def counting_hasher(settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    CountingHasher.calls = 0
    return CountingHasher


def client_at(address: str) -> Client:
    client = english_client()
    client.defaults["REMOTE_ADDR"] = address
    return client


@pytest.mark.parametrize("login", ["/accounts/login/", "/admin/login/"])
def test_past_the_limit_a_sign_in_is_refused_without_hashing(login, counting_hasher, settings, django_user_model):
    django_user_model.objects.create_user("owner", password="the-right-one", is_staff=True)
    limit = settings.AGORA_LOGIN_FAILURES_PER_USER_ADDRESS
    attacker = client_at(ATTACKER)
    statuses = [attacker.post(login, {"username": "owner", "password": f"guess {n}"}).status_code for n in range(limit)]
    # Each wrong password up to the limit is checked; the one that reaches it is told so.
    assert statuses == [200] * (limit - 1) + [429]
    assert CountingHasher.calls >= limit

    calls = CountingHasher.calls
    refused = attacker.post(login, {"username": "owner", "password": "the-right-one"})
    assert CountingHasher.calls == calls, "the refused attempt ran the password hasher"
    assert refused.status_code == 429
    assert "Too many failed sign-ins from your address" in refused.content.decode()

    # The owner, elsewhere, is not locked out by the attacker's guesses.
    owner = client_at(OWNER)
    response = owner.post(login, {"username": "owner", "password": "the-right-one"})
    assert response.status_code == 302, response.content.decode()[:2000]


def test_guessing_many_names_from_one_address_is_refused_without_hashing(counting_hasher, settings):
    """Spraying usernames (each wrong name still hashes once, so as not to reveal which exist)."""
    attacker = client_at(ATTACKER)
    for attempt in range(settings.AGORA_LOGIN_FAILURES_PER_ADDRESS):
        attacker.post("/accounts/login/", {"username": f"name{attempt}", "password": "guess"})
    calls = CountingHasher.calls
    refused = attacker.post("/accounts/login/", {"username": "yet-another", "password": "guess"})
    assert (refused.status_code, CountingHasher.calls) == (429, calls)
