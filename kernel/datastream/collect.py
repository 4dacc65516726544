"""``execute_and_collect``: the job runs while the caller iterates over what reaches its collect
sink, as PyFlink's CloseableIterator does; closing the iterator (or reaching ``limit``)
cancels a job still running. Each record is returned as PyFlink converts the collected Java
object back (``kernel.jvm.bridge.collected_conversion``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from kernel.jvm.bridge import collected_conversion

if TYPE_CHECKING:
    from kernel.common.job_client import JobClient
    from kernel.common.typeinfo import TypeInformation


class CollectedRecords:
    """What the collect sink appended (from the job's thread), waiting to be taken."""

    def __init__(self) -> None:
        self._values: list[Any] = []
        self._taken = 0
        self._ended = False
        self._changed = threading.Condition()

    def extend(self, values: list[Any]) -> None:
        with self._changed:
            self._values.extend(values)
            self._changed.notify_all()

    def end(self) -> None:
        """No more records will come (the job terminated)."""
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def take(self) -> tuple[bool, Any]:
        """Wait for the next record: ``(True, record)``, or ``(False, None)`` once the job ended
        and every record was taken."""
        with self._changed:
            while self._taken == len(self._values) and not self._ended:
                self._changed.wait()
            if self._taken == len(self._values):
                return False, None
            value = self._values[self._taken]
            self._taken += 1
            return True, value

    def __getstate__(self) -> dict[str, Any]:
        return {"values": list(self._values)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()
        self._values = state["values"]


class CloseableIterator:
    """Iterates over a running job's collected records; ``close()`` (or leaving a ``with``
    block) cancels the job if it still runs and waits for it to end. A job that failed raises
    its failure once its records are consumed."""

    def __init__(self, client: JobClient, records: CollectedRecords, type_info: TypeInformation | None = None) -> None:
        self._client = client
        self._records = records
        self._closed = False
        self._convert = None if type_info is None else collected_conversion(type_info)
        client.get_job_execution_result().then_run(records.end)

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        return self.next()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def next(self) -> Any:
        if self._closed:
            raise StopIteration("No more data.")
        present, value = self._records.take()
        if present:
            return value if self._convert is None else self._convert(value)
        failure = self._client.get_job_execution_result().exception()
        if failure is not None:
            raise failure
        raise StopIteration("No more data.")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        result = self._client.get_job_execution_result()
        if not result.done():
            self._client.cancel()
        self._client.wait()
