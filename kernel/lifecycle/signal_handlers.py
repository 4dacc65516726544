"""Signal handlers whose work runs in a thread of its own.

Python runs a signal handler in the main thread between two bytecodes, possibly while that
thread holds a lock: an ``Event``'s while it clears or leaves a wait, a ``Condition``'s, a
queue's. A handler that takes the same lock waits for itself forever. One that calls
``EventLoop.call_soon_threadsafe`` (an ``Event.set``) hung a TaskExecutor told to stop now
and then, and a Spark worker's job was then cancelled at the stop timeout. So the handler
installed here takes no lock: it writes a byte to a pipe. A thread of the handler's own reads
the pipe and runs the callback, which may take any lock.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable


class SignalCallback:
    """While entered, signal ``signum`` runs ``callback()`` in the handler's thread.

    ``again`` is what a repeated signal does, in the handler itself; Ctrl-C's second press
    raises ``KeyboardInterrupt`` this way. With ``again=None`` a repeated signal runs
    ``callback`` again. Python installs signal handlers only in the main thread, so entered
    in any other thread this does nothing. Leaving puts the previous handler back and ends
    the thread.
    """

    def __init__(self, signum: int, callback: Callable[[], None], again: Callable[[], None] | None = None) -> None:
        self.signum = signum
        self.callback = callback
        self.again = again
        self.count = 0
        self._previous: Any = None
        self._pipe: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> SignalCallback:
        if threading.current_thread() is not threading.main_thread():
            return self
        self._pipe = os.pipe()
        os.set_blocking(self._pipe[1], False)
        self._thread = threading.Thread(target=self._dispatch, args=(self._pipe[0],), daemon=True,
                                        name=f"rill-signal-{signal.Signals(self.signum).name}")
        self._thread.start()
        self._previous = signal.signal(self.signum, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.count > 1 and self.again is not None:
            self.again()
            return
        try:
            os.write(self._pipe[1], b"\0")  # type: ignore[index]
        except BlockingIOError:  # a full pipe: the thread has callbacks enough to run
            pass

    def _dispatch(self, read: int) -> None:
        while True:
            woken = os.read(read, 64)
            if not woken:  # the handler was removed
                return
            for _ in woken:
                self.callback()

    def __exit__(self, *exc: Any) -> None:
        if self._pipe is None:
            return
        signal.signal(self.signum, signal.SIG_DFL if self._previous is None else self._previous)  # None: not set from Python
        os.close(self._pipe[1])
        self._thread.join()  # type: ignore[union-attr]
        os.close(self._pipe[0])
        self._pipe = None
