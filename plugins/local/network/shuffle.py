"""The shuffle environment: the network's settings, and the connection of producers'
subpartitions to consumers' channels, whoever registers first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.local.network.input_channel import InputChannel
    from plugins.local.network.partition import ResultPartition, Subpartition


@dataclass(frozen=True)
class NetworkSettings:
    buffers_per_channel: int = 2
    floating_buffers_per_gate: int = 8
    max_buffers_per_channel: int = 10
    records_per_buffer: int = 1024

    @classmethod
    def of(cls, options: Any) -> NetworkSettings:
        """The settings of the cluster's options (:class:`plugins.local.options.ClusterOptions`)."""
        return cls(buffers_per_channel=options.buffers_per_channel,
                   floating_buffers_per_gate=options.floating_buffers_per_gate,
                   max_buffers_per_channel=options.max_buffers_per_channel,
                   records_per_buffer=options.records_per_buffer)


class ShuffleEnvironment:
    """Connects producers' subpartitions and consumers' channels, whoever registers first."""

    def __init__(self, settings: NetworkSettings) -> None:
        self.settings = settings
        self._subpartitions: dict[tuple[str, int], Subpartition] = {}
        self._channels: dict[tuple[str, int], InputChannel] = {}

    def register_partition(self, partition: ResultPartition) -> None:
        for subpartition in partition.subpartitions:
            key = (partition.partition_id, subpartition.index)
            self._subpartitions[key] = subpartition
            channel = self._channels.pop(key, None)
            if channel is not None:
                self._connect(subpartition, channel)

    def register_channel(self, partition_id: str, subpartition_index: int, channel: InputChannel) -> None:
        key = (partition_id, subpartition_index)
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
        for key in [k for k in self._subpartitions if k[0] == partition_id]:
            del self._subpartitions[key]
        for key in [k for k in self._channels if k[0] == partition_id]:
            del self._channels[key]
