"""The shuffle environment: the network's settings, its lock, and the connection of
producers' subpartitions to consumers' channels, whoever registers first.

The lock is the network's: every hand-over between a producer and a consumer (buffers,
events, credit, availability) happens under it, as tasks may run in threads of their own."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plugins.local.network.input_channel import InputChannel
    from plugins.local.network.partition import ResultPartition, Subpartition


@dataclass(frozen=True)
class NetworkSettings:
    buffers_per_channel: int = 2
    floating_buffers_per_gate: int = 8
    max_buffers_per_channel: int = 10
    records_per_buffer: int = 1024


class ShuffleEnvironment:
    """Connects producers' subpartitions and consumers' channels, whoever registers first."""

    def __init__(self, settings: NetworkSettings) -> None:
        self.settings = settings
        #: the network's lock, shared by every partition and gate
        self.lock = threading.Lock()
        self._subpartitions: dict[tuple[str, int], Subpartition] = {}
        self._channels: dict[tuple[str, int], InputChannel] = {}

    def register_partition(self, partition: ResultPartition) -> None:
        with self.lock:
            for subpartition in partition.subpartitions:
                key = (partition.partition_id, subpartition.index)
                self._subpartitions[key] = subpartition
                channel = self._channels.pop(key, None)
                if channel is not None:
                    self._connect(subpartition, channel)

    def register_channel(self, partition_id: str, subpartition_index: int, channel: InputChannel) -> None:
        key = (partition_id, subpartition_index)
        with self.lock:
            subpartition = self._subpartitions.pop(key, None)
            if subpartition is not None:
                self._connect(subpartition, channel)
            else:
                self._channels[key] = channel

    def _connect(self, subpartition: Subpartition, channel: InputChannel) -> None:
        subpartition.channel = channel
        channel.subpartition = subpartition
        subpartition.try_send()

    def release(self, partition_id: str) -> None:
        with self.lock:
            for key in [k for k in self._subpartitions if k[0] == partition_id]:
                del self._subpartitions[key]
            for key in [k for k in self._channels if k[0] == partition_id]:
                del self._channels[key]
