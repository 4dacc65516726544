"""Flink's RecordWriter: writes a task's output into its ResultPartition — batches routed to
subpartitions by the channel selector, in-band elements (watermarks, statuses) broadcast to
every subpartition or written to one chosen at random (latency markers).

In-band elements are written as Flink serialises them among the records: they wait in the open
buffers for the flush like records (:mod:`.partition`). With buffer timeout 0 (``flush_always``)
every batch and every in-band element is flushed at once, as Flink's ``flushAlways`` after
every emit.
"""

from __future__ import annotations

from random import Random
from typing import Any

from kernel.runtime.streaming.partitioning import ChannelSelector
from plugins.local.network.partition import ResultPartition


class RecordWriter:
    def __init__(self, partition: ResultPartition, selector: ChannelSelector, rng: Random,
                 flush_always: bool = False) -> None:
        self.partition = partition
        self.selector = selector
        self.rng = rng
        self.subpartitions = partition.subpartitions
        #: buffer timeout 0: every batch is sent at once
        self.flush_always = flush_always

    def emit(self, values: list, timestamps: list | None) -> None:
        subpartitions = self.subpartitions
        for channel, part_values, part_ts in self.selector.route(values, timestamps):
            subpartitions[channel].add(part_values, part_ts)
            if self.flush_always:
                subpartitions[channel].flush()

    def broadcast_emit(self, element: Any) -> None:
        """An in-band element to every subpartition."""
        self.partition.broadcast_in_band(element)
        if self.flush_always:
            self.partition.flush_all()

    def random_channel(self) -> int:
        """The subpartition a :meth:`random_emit` goes to (chosen when the element is emitted)."""
        return self.rng.randrange(len(self.subpartitions))

    def random_emit(self, channel: int, element: Any) -> None:
        """An in-band element to the subpartition :meth:`random_channel` chose."""
        subpartition = self.subpartitions[channel]
        subpartition.add_in_band(element)
        if self.flush_always:
            subpartition.flush()
