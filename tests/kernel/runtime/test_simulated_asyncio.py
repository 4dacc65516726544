"""The asyncio loop in simulated time: asyncio's tools work, time is the kernel clock."""

from __future__ import annotations

import asyncio

import pytest

from kernel.clock import NS_PER_S, SimulatedClock
from kernel.loop import EventLoop
from kernel.runtime.simulated_asyncio import SimulatedAsyncioLoop, SimulatedTimeError


def loops() -> tuple[EventLoop, SimulatedAsyncioLoop]:
    kernel = EventLoop(SimulatedClock())
    return kernel, SimulatedAsyncioLoop(kernel)


def test_sleeps_gather_timeouts_and_queues_take_simulated_time():
    kernel, loop = loops()
    log = []

    async def work(seconds):
        await asyncio.sleep(seconds)
        log.append((f"slept {seconds}", loop.time()))
        return seconds

    async def main():
        log.append(("gathered", await asyncio.gather(work(2), work(1), work(0.5)), loop.time()))
        try:
            await asyncio.wait_for(work(10), 3)
        except asyncio.TimeoutError:
            log.append(("wait_for timed out", loop.time()))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.25):
                await asyncio.sleep(1)
        queue: asyncio.Queue = asyncio.Queue()

        async def produce():
            for item in range(3):
                await asyncio.sleep(0.1)
                await queue.put(item)

        asyncio.get_running_loop().create_task(produce())
        log.append(("queued", [await queue.get() for _ in range(3)], round(loop.time(), 3)))

    task = loop.create_task(main())
    kernel.run()
    assert task.done() and task.exception() is None
    assert log == [("slept 0.5", 0.5), ("slept 1", 1.0), ("slept 2", 2.0), ("gathered", [2, 1, 0.5], 2.0),
                   ("wait_for timed out", 5.0), ("queued", [0, 1, 2], 5.55)]
    # the cancelled sleep of 10 s left no timer behind: the run ended at 5.55 s
    assert kernel.clock.now() == 5_550_000_000


def test_it_is_the_running_loop_only_inside_its_callbacks():
    kernel, loop = loops()
    seen = []
    loop.call_soon(lambda: seen.append(asyncio.get_running_loop() is loop))
    kernel.run()
    assert seen == [True]
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()


def test_real_io_is_refused_naming_the_realtime_clock():
    kernel, loop = loops()

    async def connect():
        await asyncio.open_connection("127.0.0.1", 9)

    task = loop.create_task(connect())
    kernel.run()
    with pytest.raises(SimulatedTimeError, match=r"^asyncio's loop.create_connection\(\) needs real time: under "
                                                 r"rill.clock=simulated .* \(run with rill.clock=realtime\)$"):
        task.result()


def test_closing_cancels_tasks_and_leaves_nothing_that_keeps_a_run_going():
    kernel, loop = loops()
    log = []

    async def stubborn():
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            log.append(("cancelled", loop.time()))
            await asyncio.sleep(50)  # a daemon timer now: the run does not wait for it
            log.append("never")

    loop.create_task(stubborn())
    kernel.call_later(NS_PER_S, loop.close)
    kernel.run()
    assert log == [("cancelled", 1.0)]
    assert kernel.clock.now() == NS_PER_S
    with pytest.raises(RuntimeError, match="Event loop is closed"):
        loop.create_task(stubborn())
