import pytest


@pytest.fixture
def user(alice):
    return alice


@pytest.fixture
def client(client, user):
    """The web tests act as a signed-in user: starting debates needs an account."""
    client.force_login(user)
    return client
