"""Logs: LOG_FORMAT=json writes one JSON object per line, and every line logged while a debate runs
(from the engine, the providers, the threads of sync_to_async) names the debate and its runner."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import sys

import pytest
from channels.db import database_sync_to_async
from django.conf import settings

from agora.logs import DebateFilter, JsonLinesFormatter, debate_context
from debates import runner
from debates.forms import create_debate
from testkit.fake_openai import Fault
from testkit.servers import ROOT

QUESTION = "念佛与参禅，哪条路更适合现代人修行？"


@pytest.fixture
def json_lines():
    """What the root logger's handler would write with LOG_FORMAT=json, for this test only."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(DebateFilter())
    handler.setFormatter(JsonLinesFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


@pytest.mark.django_db(transaction=True)
async def test_every_line_of_a_running_debate_names_it_and_its_runner(libraries, fast_llm, json_lines, monkeypatch):
    # One failed call to the model: the provider logs its retry from inside the engine's task.
    fast_llm.inject(Fault.server_error(), times=1)
    prepare = runner._prepare

    def prepare_and_log(debate_id):  # runs on a thread of database_sync_to_async
        logging.getLogger("debates.test").warning("preparing in a thread")
        return prepare(debate_id)

    monkeypatch.setattr(runner, "_prepare", prepare_and_log)
    debate, errors = await database_sync_to_async(create_debate)({"topic": QUESTION, "format": "duel", "rounds": 1})
    assert not errors, errors
    logging.getLogger("debates.test").warning("before the run")
    assert await runner.execute(debate.pk) == "done"
    logging.getLogger("debates.test").warning("after the run")

    lines = [line for line in json_lines() if line["logger"].startswith(("debates", "agora", "httpx", "asyncio"))]
    messages = [line["message"] for line in lines]
    assert messages[0] == "before the run" and messages[-1] == "after the run"
    during = lines[1:-1]
    assert any(line["message"] == "preparing in a thread" for line in during)
    assert any("retrying" in line["message"] and line["level"] == "WARNING" for line in during)
    runners = {line.get("runner_id") for line in during}
    assert len(runners) == 1 and None not in runners and "" not in runners, during
    assert all(line.get("debate_id") == debate.pk for line in during), during
    for outside in (lines[0], lines[-1]):
        assert "debate_id" not in outside and "runner_id" not in outside
        assert set(outside) >= {"timestamp", "level", "logger", "message"}


def test_a_json_line_carries_the_exception():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(DebateFilter())
    handler.setFormatter(JsonLinesFormatter())
    logger = logging.getLogger("agora.test.exception")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with debate_context(7, "host:1:abc"):
            try:
                raise ValueError("boom")
            except ValueError:
                logger.exception("it failed")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    line = json.loads(stream.getvalue())
    assert line["message"] == "it failed" and line["level"] == "ERROR" and line["logger"] == "agora.test.exception"
    assert "ValueError: boom" in line["exception"]
    assert (line["debate_id"], line["runner_id"]) == (7, "host:1:abc")
    assert list(line)[0] == "timestamp" and line["timestamp"].endswith("+00:00")


def test_the_plain_format_names_the_debate_too():
    formatter = logging.Formatter(settings.LOGGING["formatters"]["plain"]["format"])
    record = logging.LogRecord("debates.engine", logging.INFO, __file__, 1, "turn %s done", ("A1",), None)
    DebateFilter().filter(record)
    assert formatter.format(record).endswith("INFO debates.engine: turn A1 done")
    with debate_context(12, "abc"):
        DebateFilter().filter(record)
    assert formatter.format(record).endswith("INFO debates.engine: [debate 12 runner abc] turn A1 done")


# -- the real settings, in fresh processes ----------------------------------------------------------


def manage(*args: str, timeout: int = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


LOG_SOME = (
    "import logging\n"
    "from agora.logs import debate_context\n"
    "logging.getLogger('agora.test').warning('outside')\n"
    "with debate_context(5, 'r1'):\n"
    "    logging.getLogger('agora.test').warning('inside')\n"
)


def test_log_format_json_switches_the_handler_and_check_still_passes():
    done = manage("shell", "-c", LOG_SOME, LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    outside, inside = (json.loads(line) for line in done.stderr.splitlines())
    assert outside["message"] == "outside" and "debate_id" not in outside
    assert (inside["message"], inside["debate_id"], inside["runner_id"]) == ("inside", 5, "r1")
    plain = manage("shell", "-c", LOG_SOME)
    assert plain.returncode == 0, plain.stderr
    assert plain.stderr.splitlines()[1].endswith("WARNING agora.test: [debate 5 runner r1] inside")
    check = manage("check", LOG_FORMAT="JSON")
    assert check.returncode == 0, check.stderr
    assert all(json.loads(line) for line in check.stderr.splitlines())


def test_an_unknown_log_format_stops_start_up_with_the_choices():
    done = manage("check", LOG_FORMAT="xml")
    assert done.returncode != 0
    assert "LOG_FORMAT='xml': use plain (the default) or json" in done.stderr


def test_a_debate_run_from_the_command_line_logs_json_lines_naming_it(tmp_path, template_db, fake_llm):
    """The whole path: settings, the handler, the CLI's run; a retried call logs from the run."""
    db = tmp_path / "logs.sqlite3"
    shutil.copy(template_db, db)
    fake_llm.inject(Fault.server_error(), times=1)
    done = manage(
        "debate",
        QUESTION,
        "--format",
        "duel",
        "--rounds",
        "1",
        DATABASE_URL=f"sqlite:///{db}",
        OPENAI_BASE_URL=fake_llm.base_url,
        OPENAI_API_KEY="sk-test-logs",
        AGORA_PROVIDER_BACKOFF="0.01",
        LOG_FORMAT="json",
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    retries = [line for line in lines if "retrying" in line["message"]]
    assert len(retries) == 1, lines
    assert isinstance(retries[0]["debate_id"], int) and retries[0]["runner_id"]
