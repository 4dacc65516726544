"""``CompletableFuture`` (``pyflink.common.CompletableFuture``): a result that arrives later.

What PyFlink's JobClient methods return. ``result()`` waits for the value (raising the
failure if it completed exceptionally); ``exception()`` does not wait: it is the failure of a
future that completed exceptionally, else None, as PyFlink's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["CompletableFuture"]


class CompletableFuture:
    """Completed once, by whoever produces the value; thread-safe."""

    def __init__(self) -> None:
        import concurrent.futures  # (with logging: only for jobs that use futures)

        self._future: concurrent.futures.Future = concurrent.futures.Future()

    @staticmethod
    def completed(value: Any) -> CompletableFuture:
        future = CompletableFuture()
        future.complete(value)
        return future

    @staticmethod
    def failed(error: BaseException) -> CompletableFuture:
        future = CompletableFuture()
        future.complete_exceptionally(error)
        return future

    def complete(self, value: Any) -> bool:
        """Complete with ``value`` unless already completed; whether this call completed it."""
        import concurrent.futures

        try:
            self._future.set_result(value)
        except concurrent.futures.InvalidStateError:
            return False
        return True

    def complete_exceptionally(self, error: BaseException) -> bool:
        import concurrent.futures

        try:
            self._future.set_exception(error)
        except concurrent.futures.InvalidStateError:
            return False
        return True

    def cancel(self) -> bool:
        """Complete this future as cancelled if it is not complete; whether it now is cancelled."""
        self._future.cancel()
        return self._future.cancelled()

    def cancelled(self) -> bool:
        return self._future.cancelled()

    def done(self) -> bool:
        """Completed in any fashion: normally, exceptionally or by cancellation."""
        return self._future.done()

    def result(self) -> Any:
        """Wait for completion and return the value (raise the failure, or CancelledError)."""
        return self._future.result()

    def exception(self) -> BaseException | None:
        if self._future.done() and not self._future.cancelled():
            return self._future.exception()
        return None

    def then_run(self, action: Callable[[], Any]) -> None:
        """Run ``action()`` once this future completes in any fashion (at once if it has)."""
        self._future.add_done_callback(lambda _: action())

    def __str__(self) -> str:
        if not self._future.done():
            return "CompletableFuture[Incomplete]"
        if self._future.cancelled() or self._future.exception() is not None:
            return "CompletableFuture[Completed exceptionally]"
        return "CompletableFuture[Completed normally]"
