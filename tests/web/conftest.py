import pytest


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def client(client, user):
    """The web tests act as a signed-in user: starting debates needs an account."""
    client.force_login(user)
    return client
