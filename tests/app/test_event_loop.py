"""The event loop Agora's processes run on (agora/event_loop.py): uvloop, chosen before daphne
makes its loop, unless AGORA_EVENT_LOOP says asyncio."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
import uvloop

from agora import event_loop


@pytest.fixture
def policy():
    """The test's changes to the loop policy undone after it."""
    yield
    asyncio.set_event_loop_policy(None)


def test_new_loops_are_uvloop_by_default(monkeypatch, policy):
    monkeypatch.delenv("AGORA_EVENT_LOOP", raising=False)
    assert event_loop.install() == "uvloop"
    loop = asyncio.new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert event_loop.kind_of(loop) == "uvloop"
    finally:
        loop.close()


def test_asyncio_is_kept_when_asked_for(monkeypatch, policy):
    monkeypatch.setenv("AGORA_EVENT_LOOP", "asyncio")
    assert event_loop.install() == "asyncio"
    loop = asyncio.new_event_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
        assert event_loop.kind_of(loop) == "asyncio"
    finally:
        loop.close()


def test_a_misspelt_choice_stops_the_process_and_names_the_choices(monkeypatch, policy):
    monkeypatch.setenv("AGORA_EVENT_LOOP", "uv-loop")
    with pytest.raises(SystemExit) as stopped:
        event_loop.install()
    assert "'uv-loop'" in str(stopped.value) and "uvloop" in str(stopped.value) and "asyncio" in str(stopped.value)


def test_without_uvloop_installed_asyncio_runs(monkeypatch, policy):
    monkeypatch.delenv("AGORA_EVENT_LOOP", raising=False)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert event_loop.install() == "asyncio"
    assert not isinstance(asyncio.get_event_loop_policy(), uvloop.EventLoopPolicy)


def test_the_web_command_is_daphnes_own():
    """`python -m agora.web` takes daphne's options and says so in its help."""
    shown = subprocess.run([sys.executable, "-m", "agora.web", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: daphne") and "--proxy-headers" in shown.stdout
