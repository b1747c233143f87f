"""Log lines that say which debate they belong to, as plain text or JSON lines (LOG_FORMAT).

A running debate's id and runner id live in a context variable for the duration of the run
(`debates.runner.execute`): the tasks it creates and the threads of `sync_to_async` copy the
context, so a line logged anywhere on the debate's behalf (engine, sink, providers, httpx) carries
both; the handler's filter puts them on the record, empty outside a debate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

_running: ContextVar[tuple[int, str] | None] = ContextVar("agora_running_debate", default=None)


@contextmanager
def debate_context(debate_id: int, runner_id: str) -> Iterator[None]:
    token = _running.set((debate_id, runner_id))
    try:
        yield
    finally:
        _running.reset(token)


class DebateFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        debate_id, runner_id = _running.get() or ("", "")
        record.debate_id, record.runner_id = debate_id, runner_id
        record.debate_tag = f"[debate {debate_id} runner {runner_id}] " if runner_id else ""
        return True


class JsonLinesFormatter(JsonFormatter):
    """timestamp, level, logger, message, then the debate, the exception and any `extra`."""

    def __init__(self) -> None:
        super().__init__(
            "{levelname}{name}{message}",
            style="{",
            timestamp=True,
            rename_fields={"levelname": "level", "name": "logger", "exc_info": "exception"},
            # The plain format's prefix would only repeat debate_id and runner_id.
            reserved_attrs=[*RESERVED_ATTRS, "debate_tag"],
        )

    def process_log_record(self, log_data: dict) -> dict:
        for key in ("debate_id", "runner_id"):
            if log_data.get(key) in ("", None):
                log_data.pop(key, None)
        return {"timestamp": log_data.pop("timestamp"), **log_data}
