"""The chain's output into the network (Flink's RecordWriterOutput with its RecordWriter):
routes batches to subpartitions by the partitioner, broadcasts watermarks and statuses,
sends latency markers to a random subpartition."""

from __future__ import annotations

from random import Random
from typing import Any

from kernel.streaming.elements import LatencyMarker, Watermark, WatermarkStatus
from kernel.streaming.outputs import Output
from kernel.streaming.partitioning import ChannelSelector
from plugins.local.network.partition import ResultPartition


class RecordWriterOutput(Output):
    """A chain's output into the network: routes batches to subpartitions by the partitioner."""

    def __init__(self, partition: ResultPartition, selector: ChannelSelector, rng: Random,
                 flush_always: bool = False, watermarks: Any = None) -> None:
        self.partition = partition
        #: told of every watermark and status sent (``output_watermark``, ``output_status``)
        self.watermarks = watermarks
        self.selector = selector
        self.rng = rng
        self.subpartitions = partition.subpartitions
        #: buffer timeout 0: every batch is sent at once
        self.flush_always = flush_always

    def collect(self, values, timestamps):
        subpartitions = self.subpartitions
        for channel, part_values, part_ts in self.selector.route(values, timestamps):
            subpartitions[channel].add(part_values, part_ts)
            if self.flush_always:
                subpartitions[channel].flush()

    def emit_watermark(self, timestamp):
        if self.watermarks is not None:
            self.watermarks.output_watermark(timestamp)
        self.partition.broadcast_event(Watermark(timestamp))

    def emit_watermark_status(self, idle):
        if self.watermarks is not None:
            self.watermarks.output_status(idle)
        self.partition.broadcast_event(WatermarkStatus(idle))

    def emit_latency_marker(self, marker: LatencyMarker):
        self.subpartitions[self.rng.randrange(len(self.subpartitions))].add_event(marker)
