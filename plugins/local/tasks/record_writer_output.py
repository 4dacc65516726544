"""The chain's output into the network (Flink's RecordWriterOutput): batches go to the task's
:class:`~plugins.local.network.record_writer.RecordWriter`, watermarks and statuses are
broadcast through it (and reported to the task's watermark reporter), latency markers go to a
random subpartition.

Under the simulated clock what a task emits after its user functions charged work
(``kernel.clock.sleep``) in the running step is written at its virtual emission time
(``emission_times``, :class:`plugins.local.tasks.output_flusher.EmissionTimes`): the step's
start plus the work charged before it, not the step's start.
"""

from __future__ import annotations

from typing import Any

from kernel.runtime.streaming.elements import LatencyMarker, Watermark, WatermarkStatus
from kernel.runtime.streaming.outputs import Output
from plugins.local.network.record_writer import RecordWriter


class RecordWriterOutput(Output):
    def __init__(self, writer: RecordWriter, watermarks: Any = None, emission_times: Any = None) -> None:
        self.writer = writer
        #: told of every watermark and status sent (``output_watermark``, ``output_status``)
        self.watermarks = watermarks
        #: simulated clock: ``delay()`` of what is emitted now, ``later(delay, callback, *args)``
        self.emission_times = emission_times
        self.collect = writer.emit if emission_times is None else self._collect_when_emitted  # type: ignore[method-assign]

    def _collect_when_emitted(self, values: list, timestamps: list | None) -> None:
        times = self.emission_times
        delay = times.delay()
        if delay:
            times.later(delay, self.writer.emit, values, timestamps)
        else:
            self.writer.emit(values, timestamps)

    def _when_emitted(self, write: Any, *args: Any) -> None:
        times = self.emission_times
        delay = times.delay() if times is not None else 0
        if delay:
            times.later(delay, write, *args)
        else:
            write(*args)

    def emit_watermark(self, timestamp):
        self._when_emitted(self._write_watermark, timestamp)

    def _write_watermark(self, timestamp: int) -> None:
        if self.watermarks is not None:
            self.watermarks.output_watermark(timestamp)
        self.writer.broadcast_emit(Watermark(timestamp))

    def emit_watermark_status(self, idle):
        self._when_emitted(self._write_watermark_status, idle)

    def _write_watermark_status(self, idle: bool) -> None:
        if self.watermarks is not None:
            self.watermarks.output_status(idle)
        self.writer.broadcast_emit(WatermarkStatus(idle))

    def emit_latency_marker(self, marker: LatencyMarker):
        self._when_emitted(self.writer.random_emit, self.writer.random_channel(), marker)
