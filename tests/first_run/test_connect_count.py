"""/connect/'s answer counts the models as the reader's language counts them: a server offering one
model was said to have "answered: 1 models"."""

from __future__ import annotations

import pytest

from testkit.fake_openai import FakeOpenAIServer
from tests.first_run.test_connect import KEY, client_for, connect, vault_key  # noqa: F401 - autouse

pytestmark = pytest.mark.django_db


def test_one_model_is_one_model(superuser):
    owner = client_for(superuser)
    with FakeOpenAIServer(api_key=KEY, models=["fake-chat"]) as server:
        response = connect(owner, server.base_url, follow=True)
    page = response.content.decode()
    assert "answered: 1 model." in page, page[:3000]
    assert "1 models" not in page
