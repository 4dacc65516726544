"""The shuffle environment: the network's settings, its lock, and the connection of
producers' subpartitions to consumers' channels, whoever registers first. A consumer's channel
reads a subpartition of this TaskExecutor in memory, or one of another TaskExecutor (its
producer's ``data_address`` differs from this one's) over TCP (:mod:`.remote`).

The lock is the network's: every hand-over between a producer and a consumer (buffers,
events, credit, availability) happens under it, as tasks may run in threads of their own."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from plugins.local.network.input_gate import InputGate
from plugins.local.network.wire import edge_type

if TYPE_CHECKING:
    from kernel.loop import EventLoop
    from plugins.local.deployment import ConsumedInput
    from plugins.local.network.input_channel import InputChannel
    from plugins.local.network.partition import ResultPartition, Subpartition
    from plugins.local.network.remote import PartitionRequestClient


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

    def __init__(self, settings: NetworkSettings, data_address: str = "", client: PartitionRequestClient | None = None
                 ) -> None:
        self.settings = settings
        #: the network's lock, shared by every partition and gate
        self.lock = threading.Lock()
        #: where this TaskExecutor serves its partitions to others ("": to none, all in one process)
        self.data_address = data_address
        self.client = client
        self._subpartitions: dict[tuple[str, int], Subpartition] = {}
        self._channels: dict[tuple[str, int], InputChannel] = {}

    def create_input_gate(self, consumed: ConsumedInput, index: int, stream_graph: Any, loop: EventLoop | None = None
                          ) -> InputGate:
        """The gate of one input of a task (whose loop is ``loop``): a channel per consumed
        subpartition, remote where its producer runs in another TaskExecutor."""
        gate = InputGate(len(consumed.channels), self.settings, index, self.lock, loop)
        for channel, address in enumerate(consumed.locations):
            if address and address != self.data_address:
                from plugins.local.network.remote import RemoteInputChannel  # TCP: loaded only when used

                gate.channels[channel] = RemoteInputChannel(gate, channel, address,
                                                            edge_type(stream_graph, consumed.edges[channel]))
        return gate

    def connect_input_gate(self, gate: InputGate, consumed: ConsumedInput,
                           on_failure: Callable[[BaseException], None]) -> None:
        """Connect the gate's channels to their subpartitions (remote ones request theirs)."""
        for channel, (partition_id, subpartition) in zip(gate.channels, consumed.channels):
            if channel.remote:
                channel.on_failure = on_failure
                self.client.request(channel, partition_id, subpartition)
            else:
                self.register_channel(partition_id, subpartition, channel)

    def release_input_gate(self, gate: InputGate) -> None:
        """The consuming task ended: remote producers stop sending."""
        for channel in gate.channels:
            if channel.remote:
                channel.release()

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

    def unregister_channel(self, partition_id: str, subpartition_index: int, channel: Any) -> None:
        """A channel waiting for its subpartition no longer does."""
        with self.lock:
            if self._channels.get((partition_id, subpartition_index)) is channel:
                del self._channels[(partition_id, subpartition_index)]

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
