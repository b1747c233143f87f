"""A time limit on each await of one streamed reply, with one timer for the whole stream.

A stream is read a line at a time and every read is bounded (the first token's limit, then the
silence limit between chunks). `asyncio.timeout()` around each read made a timer per token: a
handle created, pushed on the loop's heap and cancelled, a few microseconds each but thousands a
second at 100 debates (about 5% of the web process's CPU in a py-spy profile, bench/README.md).
Here one timer stays armed across reads: a read only notes its own deadline, and the timer, when
it fires, either finds the read still waiting past its deadline (and cancels it, as
`asyncio.timeout` would) or moves itself to the deadline of the read in progress. A stream that
keeps talking costs one timer callback per limit's length, not one timer per token.
"""

from __future__ import annotations

import asyncio
from typing import Any


class SilenceWatch:
    """Bounds the awaits of the task that makes them (one task: a stream is read by its caller)."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.deadline: float | None = None  # the read in progress's, None between reads
        self.timer: asyncio.TimerHandle | None = None
        self.fired = False

    async def bounded(self, awaitable: Any, seconds: float) -> Any:
        """`await awaitable`, or TimeoutError once `seconds` pass without it completing."""
        self.deadline = deadline = self.loop.time() + max(0.0, seconds)
        if self.timer is None or self.timer.when() > deadline:
            self._arm(deadline)  # an earlier timer is left alone: it moves itself when it fires
        cancelling = self.task.cancelling()
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self.fired:
                self.fired = False
                if self.task.uncancel() <= cancelling:  # ours alone, not also a Stop
                    raise TimeoutError from None
            raise
        finally:
            self.deadline = None

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _arm(self, when: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self.loop.call_at(when, self._check, when)

    def _check(self, armed_for: float) -> None:
        self.timer = None
        if self.deadline is None:
            return  # between reads: the next read arms it again
        if self.deadline <= armed_for:  # the loop calls a timer at its time, as asyncio.timeout's
            # The task waits inside `bounded` (it runs only when this callback does not), so the
            # cancellation lands in that await, where it becomes TimeoutError.
            self.fired = True
            self.task.cancel()
        else:
            self._arm(self.deadline)
