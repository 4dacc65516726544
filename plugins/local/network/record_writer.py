"""The chain's output into the network (Flink's RecordWriterOutput with its RecordWriter):
routes batches to subpartitions by the partitioner, broadcasts watermarks and statuses,
sends latency markers to a random subpartition.

Watermarks, statuses and latency markers are written in band, as Flink serialises them among
the records: they wait in the open buffers for the flush like records
(:mod:`.partition`). With buffer timeout 0 (``flush_always``) every batch and every in-band
element is flushed at once, as Flink's ``flushAlways`` after every emit.

Under the simulated clock what a task emits after its user functions charged work
(``kernel.clock.sleep``) in the running step is written at its virtual emission time
(``emission_times``, :class:`plugins.local.tasks.output_flusher.EmissionTimes`): the step's
start plus the work charged before it, not the step's start.
"""

from __future__ import annotations

from random import Random
from typing import Any

from kernel.runtime.streaming.elements import LatencyMarker, Watermark, WatermarkStatus
from kernel.runtime.streaming.outputs import Output
from kernel.runtime.streaming.partitioning import ChannelSelector
from plugins.local.network.partition import ResultPartition


class RecordWriterOutput(Output):
    """A chain's output into the network: routes batches to subpartitions by the partitioner."""

    def __init__(self, partition: ResultPartition, selector: ChannelSelector, rng: Random,
                 flush_always: bool = False, watermarks: Any = None, emission_times: Any = None) -> None:
        self.partition = partition
        #: told of every watermark and status sent (``output_watermark``, ``output_status``)
        self.watermarks = watermarks
        self.selector = selector
        self.rng = rng
        self.subpartitions = partition.subpartitions
        #: buffer timeout 0: every batch is sent at once
        self.flush_always = flush_always
        #: simulated clock: ``delay()`` of what is emitted now, ``later(delay, callback, *args)``
        self.emission_times = emission_times
        if emission_times is not None:
            self.collect = self._collect_when_emitted  # type: ignore[method-assign]

    def collect(self, values, timestamps):
        subpartitions = self.subpartitions
        for channel, part_values, part_ts in self.selector.route(values, timestamps):
            subpartitions[channel].add(part_values, part_ts)
            if self.flush_always:
                subpartitions[channel].flush()

    def _collect_when_emitted(self, values, timestamps):
        times = self.emission_times
        delay = times.delay()
        if delay:
            times.later(delay, RecordWriterOutput.collect, self, values, timestamps)
        else:
            RecordWriterOutput.collect(self, values, timestamps)

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
        self.partition.broadcast_in_band(Watermark(timestamp))
        if self.flush_always:
            self.partition.flush_all()

    def emit_watermark_status(self, idle):
        self._when_emitted(self._write_watermark_status, idle)

    def _write_watermark_status(self, idle: bool) -> None:
        if self.watermarks is not None:
            self.watermarks.output_status(idle)
        self.partition.broadcast_in_band(WatermarkStatus(idle))
        if self.flush_always:
            self.partition.flush_all()

    def emit_latency_marker(self, marker: LatencyMarker):
        self._when_emitted(self._write_latency_marker, self.subpartitions[self.rng.randrange(len(self.subpartitions))],
                           marker)

    def _write_latency_marker(self, subpartition: Any, marker: LatencyMarker) -> None:
        subpartition.add_in_band(marker)
        if self.flush_always:
            subpartition.flush()
