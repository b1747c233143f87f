"""One flusher per event loop: the text deltas of every debate running there, written in one
transaction per frame interval, then sent as one frame per debate.

A sink per debate that commits its own deltas costs a transaction per debate per interval, all on
the one database thread that also serves the pages: at 100 debates that is 2,500 small
transactions a second, and frames queue behind them (bench/README.md, "before"). Batched here, the
cost per interval is two `executemany` statements whatever the number of debates.

Ordering is per debate and unchanged: a sink's events first flush (this flusher, all debates),
then commit under the sink's lock; a flush holds the lock of every sink it writes, so a debate's
frames leave in the order of their `seq`.

On PostgreSQL the flush has a thread of its own: on Channels' one database thread it queued behind
every other debate's turn events, leases and preparation: one worker's p99 at 30 debates was
0.4–2.2 s there, 0.18–0.27 s in three of four runs on its own thread (bench/README.md, nineteenth
session). SQLite keeps it on that thread: a second writer there waits in SQLite's busy handler,
which sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from channels.db import database_sync_to_async
from django.db import connection, transaction

from debates.models import Debate, Turn
from debates.pace import Pace


class Flushable(Protocol):
    """What the flusher needs of a sink (`debates.sink.DjangoSink`), as `fanout.Viewer` is what a
    subscription needs of a consumer: the sink imports the flusher, never the other way round."""

    debate_id: int
    runner_id: str | None  # the lease that fences its writes, if any
    seq: int  # the debate's last committed seq
    lost: bool  # its lease is gone: write nothing more
    lock: asyncio.Lock  # held while a frame of this debate is written and sent
    pending: dict[str, list[str]]  # turn key → text deltas not written yet
    texts: dict[str, str]  # turn key → text written so far
    thinking_pending: dict[str, list[str]]  # turn key → thinking deltas not written yet
    thoughts: dict[str, str]  # turn key → thinking written so far (a running turn's)
    turn_pks: dict[str, int]  # turn key → Turn row
    paces: dict[str, Pace]  # turn key → when its text arrived (a running turn's; the replay's)

    async def send_deltas(self, chunks: dict[str, str], thinking: dict[str, str] | None = None) -> None:
        """`chunks` (turn key → text) and `thinking` (turn key → thinking) were committed as the
        debate's next seq: send its frame."""

    def lose(self) -> None:
        """The lease was lost: go quiet and stop the engine."""


def storable(text: str) -> str:
    """Model output as the database can hold it: PostgreSQL text cannot contain NUL."""
    return text.replace("\x00", "")


_flushers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, Flusher]] = weakref.WeakKeyDictionary()


def flusher_for(interval: float) -> Flusher:
    """The flusher of the running loop for this frame interval (sinks of one loop share it)."""
    loop = asyncio.get_running_loop()
    by_interval = _flushers.setdefault(loop, {})
    if interval not in by_interval:
        by_interval[interval] = Flusher(interval)
    return by_interval[interval]


class Flusher:
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.waiting: dict[Flushable, None] = {}  # an ordered set
        self.lock = asyncio.Lock()
        self.task: asyncio.Task | None = None
        self.last = float("-inf")  # loop time of the last flush
        self.stats = {"flushes": 0}

    def want(self, sink: Flushable) -> None:
        """`sink` has pending deltas: flush them within the interval. The first delta after a quiet
        spell goes out at once; while text keeps coming, each interval's deltas share a frame."""
        self.waiting[sink] = None
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._later())

    async def _later(self) -> None:
        wait = self.last + self.interval - asyncio.get_running_loop().time()
        if wait > 0:
            await asyncio.sleep(wait)
        await self.flush()

    async def flush(self) -> None:
        async with self.lock:
            sinks = [sink for sink in self.waiting if sink.pending or sink.thinking_pending]
            self.waiting.clear()
            if not sinks:
                return
            self.last = asyncio.get_running_loop().time()
            async with contextlib.AsyncExitStack() as held:
                for sink in sinks:
                    await held.enter_async_context(sink.lock)
                at = time.time()  # when this frame's text is taken: its point in each turn's pace
                batch = []
                for sink in sinks:
                    pending, sink.pending = sink.pending, {}
                    thinking, sink.thinking_pending = sink.thinking_pending, {}
                    if not sink.lost:
                        batch.append((sink, pending, thinking))
                if not batch:
                    return
                written, lost = await _writer(write)(batch, at)
                self.stats["flushes"] += 1
                for sink, chunks, thoughts in written:
                    await sink.send_deltas(chunks, thoughts)
            for sink in lost:
                sink.lose()


_FRAME_WRITER = ThreadPoolExecutor(1, thread_name_prefix="agora-frames")


def _writer(function):
    """`function` on the thread its database lets it have (see the module's docstring)."""
    if connection.vendor == "sqlite":
        return database_sync_to_async(function)
    return database_sync_to_async(function, thread_sensitive=False, executor=_FRAME_WRITER)


def write(batch: list[tuple[Flushable, dict[str, list[str]], dict[str, list[str]]]], at: float | None = None):
    """In one transaction: each debate's seq + 1, fenced by its runner's lease (a debate another
    runner took over is left alone and reported lost), then the text (and the thinking) of each
    turn that grew. Each grown turn's pace gets one more point in memory, [ms since the turn
    started, characters so far], taken `at` (`debates.pace`); the sink writes it with the turn's
    end. Raw `executemany`: the ORM's per-statement cost, times every debate, was the flush's
    cost."""
    at = time.time() if at is None else at
    debates, turns = Debate._meta.db_table, Turn._meta.db_table
    fenced = [(sink.seq + 1, sink.debate_id, sink.runner_id) for sink, *_ in batch if sink.runner_id]
    free = [(sink.seq + 1, sink.debate_id) for sink, *_ in batch if not sink.runner_id]
    with transaction.atomic(), connection.cursor() as cursor:
        ours = {sink.debate_id for sink, *_ in batch if not sink.runner_id}
        if fenced:
            cursor.executemany(f"UPDATE {debates} SET seq = %s WHERE id = %s AND runner_id = %s", fenced)
            if cursor.rowcount == len(fenced):
                ours.update(pk for _, pk, _ in fenced)
            else:  # some lease was lost: find out whose (rare, so a second query is fine)
                wanted = {pk: (seq, runner) for seq, pk, runner in fenced}
                placeholders = ", ".join(["%s"] * len(wanted))
                cursor.execute(f"SELECT id, seq, runner_id FROM {debates} WHERE id IN ({placeholders})", list(wanted))
                ours.update(pk for pk, seq, runner in cursor.fetchall() if wanted[pk] == (seq, runner))
        if free:
            cursor.executemany(f"UPDATE {debates} SET seq = %s WHERE id = %s", free)
        written, texts, thoughts = [], [], []
        for sink, pending, thinking in batch:
            if sink.debate_id not in ours:
                continue
            chunks = {key: storable("".join(parts)) for key, parts in pending.items()}
            for key, chunk in chunks.items():
                text, pace = sink.texts.get(key, "") + chunk, sink.paces.get(key)
                texts.append((text, sink.turn_pks[key]))
                if pace is not None:
                    pace.add(at, len(text))
            thought = {key: storable("".join(parts)) for key, parts in thinking.items()}
            for key, chunk in thought.items():
                thoughts.append((sink.thoughts.get(key, "") + chunk, sink.turn_pks[key]))
            written.append((sink, chunks, thought))
        if texts:
            cursor.executemany(f"UPDATE {turns} SET text = %s WHERE id = %s", texts)
        if thoughts:
            cursor.executemany(f"UPDATE {turns} SET thinking = %s WHERE id = %s", thoughts)
    lost = [sink for sink, *_ in batch if sink.debate_id not in ours]
    return written, lost
