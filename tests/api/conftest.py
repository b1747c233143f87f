import pytest

from testkit.servers import USERS
from tests.api.client import Api, issue_token


@pytest.fixture(scope="module")
def tokens(agora):
    """One token per user, each made on that user's token page."""
    return {name: issue_token(agora.url, name, USERS[name]) for name in ("alice", "bob")}


@pytest.fixture
def alice(agora, tokens):
    return Api(agora.url, tokens["alice"])


@pytest.fixture
def bob(agora, tokens):
    return Api(agora.url, tokens["bob"])
