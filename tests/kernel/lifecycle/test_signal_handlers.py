"""Signal handlers whose callbacks run in a thread of their own: a signal that lands while the
main thread holds a lock its callback takes does not hang the process (a TaskExecutor told to
stop did, now and then, in ``EventLoop.call_soon_threadsafe``)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from kernel.clock import RealtimeClock
from kernel.lifecycle.signal_handlers import SignalCallback
from kernel.loop import EventLoop


class Repeated(Exception):
    pass


def repeated() -> None:
    raise Repeated


def signalled(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.01)  # the handler runs in this thread before the sleep returns


def test_a_signal_landing_while_the_main_thread_holds_the_lock_its_callback_takes_does_not_hang():
    lock = threading.Lock()
    ran: list[str] = []

    def callback() -> None:
        with lock:
            ran.append(threading.current_thread().name)

    with SignalCallback(signal.SIGUSR1, callback):
        with lock:
            signalled(signal.SIGUSR1)
            assert ran == []  # waiting for the lock, in the handler's thread
        deadline = time.monotonic() + 5
        while not ran and time.monotonic() < deadline:
            time.sleep(0.001)
    assert ran == ["rill-signal-SIGUSR1"]


def test_an_event_loop_in_the_main_thread_stops_on_a_signal_landing_while_it_holds_its_wakeup_lock():
    loop = EventLoop(RealtimeClock())
    loop.io_started()  # it waits for another thread rather than returning
    wakeup = loop._wakeup._cond  # what Event.clear and the end of Event.wait hold
    with SignalCallback(signal.SIGUSR1, lambda: loop.call_soon_threadsafe(loop.stop)):
        with wakeup:
            signalled(signal.SIGUSR1)
        started = time.monotonic()
        loop.run(daemons=True)
    assert time.monotonic() - started < 5


def test_a_repeated_signal_runs_again_in_the_handler_and_without_again_the_callback_once_more():
    calls: list[int] = []
    with SignalCallback(signal.SIGUSR1, lambda: calls.append(1), again=repeated) as callback:
        signalled(signal.SIGUSR1)
        with pytest.raises(Repeated):
            signalled(signal.SIGUSR1)
    assert calls == [1] and callback.count == 2
    with SignalCallback(signal.SIGUSR1, lambda: calls.append(2)):
        signalled(signal.SIGUSR1)
        signalled(signal.SIGUSR1)
    assert calls == [1, 2, 2]  # leaving waits for the callbacks the pipe holds


def test_leaving_puts_the_previous_handler_back_and_ends_its_thread():
    def previous(signum, frame) -> None:
        pass

    before = signal.signal(signal.SIGUSR1, previous)
    try:
        with SignalCallback(signal.SIGUSR1, lambda: None) as callback:
            assert signal.getsignal(signal.SIGUSR1) == callback._handle
            thread = callback._thread
            assert thread.is_alive()
        assert signal.getsignal(signal.SIGUSR1) is previous and not thread.is_alive()
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_outside_the_main_thread_it_installs_nothing():
    before = signal.getsignal(signal.SIGUSR1)
    seen: list[object] = []

    def enter() -> None:
        with SignalCallback(signal.SIGUSR1, lambda: None):
            seen.append(signal.getsignal(signal.SIGUSR1))

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert seen == [before]
