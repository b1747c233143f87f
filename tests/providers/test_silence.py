"""One timer bounds every read of a stream (debates.providers.silence): a read that waits past its
limit fails as asyncio.timeout() would, a stream that keeps talking never does, and the timer is
not re-made per read."""

from __future__ import annotations

import asyncio
import time

import pytest

from debates.providers.silence import SilenceWatch


async def test_a_read_past_its_limit_fails_with_timeout_error():
    watch = SilenceWatch()
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await watch.bounded(asyncio.sleep(5), 0.2)
    assert 0.19 <= time.monotonic() - started < 2
    watch.close()


async def test_reads_under_their_limit_never_fail_and_share_one_timer():
    watch = SilenceWatch()
    armed = []
    arm = watch._arm
    watch._arm = lambda when: (armed.append(when), arm(when))
    started = time.monotonic()
    for _ in range(60):  # 60 reads of 10 ms: 0.6 s in all, three times the limit of each
        assert await watch.bounded(asyncio.sleep(0.01, result="chunk"), 0.2) == "chunk"
    assert time.monotonic() - started > 0.4
    # The timer moved itself a few times (once per limit's length), never once per read.
    assert 1 <= len(armed) <= 6, armed
    watch.close()
    assert watch.timer is None


async def test_a_shorter_limit_after_a_longer_one_is_kept():
    watch = SilenceWatch()
    assert await watch.bounded(asyncio.sleep(0, result=1), 30) == 1  # the timer armed 30 s out
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await watch.bounded(asyncio.sleep(5), 0.1)
    assert time.monotonic() - started < 1


async def test_a_stop_during_a_read_stays_a_cancellation():
    async def reader():
        watch = SilenceWatch()
        await watch.bounded(asyncio.sleep(5), 10)

    task = asyncio.ensure_future(reader())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_a_timeout_leaves_the_task_able_to_go_on():
    watch = SilenceWatch()
    with pytest.raises(TimeoutError):
        await watch.bounded(asyncio.sleep(5), 0.05)
    assert asyncio.current_task().cancelling() == 0  # the watch took its cancellation back
    assert await watch.bounded(asyncio.sleep(0.01, result="after"), 1) == "after"
    await asyncio.sleep(0.01)  # and nothing cancels it later
    watch.close()
