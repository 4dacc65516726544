"""An asyncio event loop in the run's simulated time, for coroutines of user functions.

:class:`SimulatedAsyncioLoop` is an ``asyncio.AbstractEventLoop`` whose ``time()`` is the kernel
clock and whose callbacks are callbacks of the kernel's :class:`~kernel.loop.EventLoop`:
``call_soon`` becomes the kernel's ``call_soon``, ``call_at`` a kernel timer. So
``await asyncio.sleep(2)`` takes two seconds of simulated time (the kernel loop jumps there when
nothing else is runnable), tasks, futures, ``asyncio.wait_for``, ``asyncio.timeout``,
``gather``, locks and queues work as usual, and a re-run gives the same sequence of callbacks.

The loop has no selector: there is no real I/O in simulated time. Sockets, pipes, subprocesses,
executors and signal handlers are refused with an error naming ``rill.clock=realtime``, under
which coroutines run on a real asyncio loop in a thread.

Invariant: while one of its callbacks runs the loop is asyncio's running loop (so
``asyncio.get_running_loop()`` and everything built on it find it), and only then. Once
closed, its tasks are cancelled and unwind in later callbacks; timers they set then are daemon
timers (they keep no run going) and their errors are not reported.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from kernel.clock import NS_PER_S
from kernel.loop import EventLoop, TimerHandle

_logger = logging.getLogger("asyncio")

#: what a simulated clock cannot do: real I/O, threads and processes
_REAL_IO = (
    "run_in_executor", "set_default_executor", "getaddrinfo", "getnameinfo", "create_connection",
    "create_server", "sendfile", "start_tls", "create_unix_connection", "create_unix_server",
    "connect_accepted_socket", "create_datagram_endpoint", "connect_read_pipe", "connect_write_pipe",
    "subprocess_shell", "subprocess_exec", "add_reader", "remove_reader", "add_writer", "remove_writer",
    "sock_recv", "sock_recv_into", "sock_recvfrom", "sock_recvfrom_into", "sock_sendall", "sock_sendto",
    "sock_connect", "sock_accept", "sock_sendfile", "add_signal_handler", "remove_signal_handler",
    "run_forever", "run_until_complete", "shutdown_default_executor",
)


class SimulatedTimeError(RuntimeError):
    """A coroutine asked the simulated asyncio loop for real I/O."""


class SimulatedAsyncioLoop(asyncio.AbstractEventLoop):
    def __init__(self, kernel_loop: EventLoop) -> None:
        self._kernel = kernel_loop
        self._clock = kernel_loop.clock
        self._timers: dict[int, TimerHandle] = {}  # id(asyncio handle) -> kernel timer
        self._closed = False
        self._debug = False
        self._exception_handler: Callable[[Any, dict], None] | None = None
        self._task_factory: Callable[..., Any] | None = None

    # -- time and scheduling ------------------------------------------------------------------

    def time(self) -> float:
        return self._clock.now() / NS_PER_S

    def call_soon(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context)
        self._kernel.call_soon(self._run, handle)
        return handle

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context)
        self._kernel.call_soon_threadsafe(self._run, handle)
        return handle

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,
                   context: Any = None) -> asyncio.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,
                context: Any = None) -> asyncio.TimerHandle:
        handle = asyncio.TimerHandle(when, callback, args, self, context)
        self._timers[id(handle)] = self._kernel.call_at(round(when * NS_PER_S), self._fire, handle, daemon=self._closed)
        return handle

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        timer = self._timers.pop(id(handle), None)
        if timer is not None:
            timer.cancel()

    def _fire(self, handle: asyncio.TimerHandle) -> None:
        self._timers.pop(id(handle), None)
        self._run(handle)

    def _run(self, handle: asyncio.Handle) -> None:
        if handle.cancelled():
            return
        previous = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(self)
        try:
            handle._run()
        finally:
            asyncio.events._set_running_loop(previous)

    # -- futures and tasks --------------------------------------------------------------------

    def create_future(self) -> asyncio.Future:
        return asyncio.Future(loop=self)

    def create_task(self, coro: Any, *, name: str | None = None, context: Any = None) -> asyncio.Task:
        if self._closed:
            coro.close()
            raise RuntimeError("Event loop is closed")
        if self._task_factory is not None:
            return self._task_factory(self, coro, context=context) if context is not None \
                else self._task_factory(self, coro)
        return asyncio.Task(coro, loop=self, name=name, context=context)

    def set_task_factory(self, factory: Callable[..., Any] | None) -> None:
        self._task_factory = factory

    def get_task_factory(self) -> Callable[..., Any] | None:
        return self._task_factory

    # -- state --------------------------------------------------------------------------------

    def is_running(self) -> bool:
        return not self._closed

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Cancel what is pending: the tasks (they unwind in later callbacks) and the timers."""
        if self._closed:
            return
        for task in asyncio.all_tasks(self):
            task.cancel()
        self._closed = True
        timers, self._timers = self._timers, {}
        for timer in timers.values():
            timer.cancel()

    def stop(self) -> None:
        """Nothing to stop: the kernel's loop runs the callbacks."""

    async def shutdown_asyncgens(self) -> None:
        """Asynchronous generators are closed by the garbage collector."""

    def get_debug(self) -> bool:
        return self._debug

    def set_debug(self, enabled: bool) -> None:
        self._debug = enabled

    # -- errors -------------------------------------------------------------------------------

    def get_exception_handler(self) -> Callable[[Any, dict], None] | None:
        return self._exception_handler

    def set_exception_handler(self, handler: Callable[[Any, dict], None] | None) -> None:
        self._exception_handler = handler

    def default_exception_handler(self, context: dict) -> None:
        exception = context.get("exception")
        _logger.error(context.get("message", "Unhandled exception in event loop"),
                      exc_info=(type(exception), exception, exception.__traceback__) if exception else None)

    def call_exception_handler(self, context: dict) -> None:
        if self._closed:
            return
        if self._exception_handler is None:
            self.default_exception_handler(context)
        else:
            self._exception_handler(self, context)


def _refuse(name: str) -> Callable[..., Any]:
    def refused(self: SimulatedAsyncioLoop, *args: Any, **kwargs: Any) -> Any:
        raise SimulatedTimeError(
            f"asyncio's loop.{name}() needs real time: under rill.clock=simulated coroutines run in "
            "simulated time without real I/O, threads or processes (run with rill.clock=realtime)")

    refused.__name__ = name
    return refused


for _name in _REAL_IO:
    setattr(SimulatedAsyncioLoop, _name, _refuse(_name))
