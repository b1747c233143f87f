"""Fixtures shared by the suite: the fake OpenAI server and a real Agora server around it."""

from __future__ import annotations

import os

import pytest

from debates.testing.fake_openai import FakeOpenAIServer
from tests.live import AgoraServer, prepare_database

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_or_skip(condition: bool, reason: str) -> None:
    """Outside CI a missing system part skips with the reason; under CI it fails: CI must have it."""
    if not condition:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must provide it: see .ci/run)")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def template_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("template-db") / "template.sqlite3"
    prepare_database(path, dict(os.environ))
    return path


@pytest.fixture(scope="module")
def fake_llm_server():
    with FakeOpenAIServer(token_delay=0.005) as server:
        yield server


@pytest.fixture
def fake_llm(fake_llm_server):
    """The module's fake server, reset to defaults for each test."""
    fake_llm_server.reset()
    fake_llm_server.script = None
    fake_llm_server.token_delay = 0.005
    yield fake_llm_server
    fake_llm_server.reset()


@pytest.fixture(scope="module")
def agora(tmp_path_factory, template_db, fake_llm_server):
    server = AgoraServer(tmp_path_factory.mktemp("agora"), fake_llm_server.base_url, template_db).start()
    yield server
    server.stop()
