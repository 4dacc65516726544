"""Channels between TaskExecutors over TCP (plugins/local/network/remote.py, wire.py): a
producer's partition request server and a consumer's client on 127.0.0.1, real sockets, one
event loop (as two TaskExecutors of one process would have it). Credits, backlog and floating
buffers as Flink's; barriers block until resumed; records typed or pickled; a lost
connection fails the consumer."""

from __future__ import annotations

import pytest

from kernel.clock import NS_PER_MS, RealtimeClock
from kernel.common import Types
from kernel.loop import EventLoop
from kernel.streaming.elements import CheckpointBarrier, RecordBatch, Watermark
from kernel.tcp import Server
from plugins.local.deployment import ConsumedInput
from plugins.local.network.partition import ResultPartition
from plugins.local.network.remote import (
    PartitionRequestClient,
    PartitionRequestServer,
    RemoteInputChannel,
    RemoteTransportException,
)
from plugins.local.network.shuffle import NetworkSettings, ShuffleEnvironment
from plugins.local.network.wire import RecordCodec

SETTINGS = NetworkSettings(buffers_per_channel=2, floating_buffers_per_gate=8, max_buffers_per_channel=10,
                           records_per_buffer=4)


class Edge:
    output_tag = None
    source_id = 1


class Graph:
    def __init__(self, output_type) -> None:
        self.nodes = {1: type("Node", (), {"output_type": output_type})()}


class Link:
    """A producer TaskExecutor (server, partition "p") and a consumer one (client, gate)."""

    def __init__(self, output_type=None) -> None:
        self.loop = EventLoop(RealtimeClock())
        self.loop.io_started()  # frames come from the sockets' threads
        self.producer = ShuffleEnvironment(SETTINGS)
        self.server = PartitionRequestServer(self.producer, self.loop, "127.0.0.1")
        self.partition = ResultPartition("p", 1, SETTINGS, False, output_type)
        self.producer.register_partition(self.partition)
        self.consumer = ShuffleEnvironment(SETTINGS, data_address="127.0.0.1:1",
                                           client=PartitionRequestClient(self.loop))
        consumed = ConsumedInput(0, [("p", 0)], [self.server.address], [Edge()])
        self.gate = self.consumer.create_input_gate(consumed, 0, Graph(output_type))
        self.failures: list[BaseException] = []
        self.consumer.connect_input_gate(self.gate, consumed, self.failures.append)
        self.channel = self.gate.channels[0]

    def settle(self, done) -> None:
        """Run the loop until ``done()`` (checked every few ms; a test fails after 10 s)."""
        deadline = self.loop.clock.now() + 10_000 * NS_PER_MS

        def check() -> None:
            if done() or self.loop.clock.now() > deadline:
                self.loop.stop()
            else:
                self.loop.call_later(2 * NS_PER_MS, check)

        self.loop.call_soon(check)
        self.loop.run()
        assert done()

    def received(self) -> list:
        return list(self.channel.queue)

    def process(self, count: int) -> None:
        """The consumer processes ``count`` buffers (their credit goes back)."""
        for _ in range(count):
            channel, item = self.gate.poll()
            assert isinstance(item, RecordBatch)
            channel.recycle()

    def close(self) -> None:
        self.server.close()
        self.consumer.client.close()


@pytest.fixture
def link():
    link = Link()
    yield link
    link.close()


def test_the_request_announces_the_exclusive_buffers_and_the_backlog_brings_floating_ones(link):
    assert isinstance(link.channel, RemoteInputChannel)
    sub = link.partition.subpartitions[0]
    sub.add(list(range(4 * 30)), None)  # 30 full buffers
    # 2 exclusive credits; the first buffer announces a backlog of 29: the 8 floating buffers go too
    link.settle(lambda: len(link.received()) == 10)
    assert [b.values for b in link.received()[:2]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert sub.queued_buffers == 20 and link.gate.floating_free == 0 and link.channel.waiting
    # each processed buffer's credit comes back: exclusive ones announced again, floating ones
    # through the gate to the channel waiting for them
    link.process(3)
    link.settle(lambda: len(link.received()) == 10)
    assert sub.queued_buffers == 17
    link.process(10)
    link.settle(lambda: sub.queued_buffers == 7)
    assert len(link.received()) == 10


def test_a_slow_consumer_leaves_the_producer_without_credit_and_unavailable():
    link = Link()
    try:
        partition = link.partition
        partition.subpartitions[0].add(list(range(4 * 20)), None)
        link.settle(lambda: len(link.received()) == 10)
        # 10 buffers wait for credit: max-buffers-per-channel, and the pool (2 + 8) is used up
        assert not partition.is_available() and partition.in_use == 10
        resumed = []
        partition.when_available(lambda: resumed.append(True))
        link.process(1)
        link.settle(lambda: bool(resumed))
    finally:
        link.close()


def test_events_need_no_credit_and_an_aligned_barrier_blocks_until_resumed(link):
    sub = link.partition.subpartitions[0]
    sub.add_event(Watermark(5))
    sub.add_event(CheckpointBarrier(1, 100, aligned=True))
    sub.add(list(range(8)), None)
    sub.flush()
    link.settle(lambda: len(link.received()) == 2)
    assert [repr(e) for e in link.received()] == ["Watermark(5)", "CheckpointBarrier(1, aligned)"]
    assert sub.blocked and sub.queued_buffers == 2
    link.gate.poll(), link.gate.poll()
    link.channel.resume_consumption()
    link.settle(lambda: len(link.received()) == 2)
    assert [b.values for b in link.received()] == [[0, 1, 2, 3], [4, 5, 6, 7]] and not sub.blocked


def test_records_cross_with_their_types_or_pickled():
    typed = Link(Types.TUPLE([Types.STRING(), Types.LONG()]))
    try:
        typed.partition.subpartitions[0].add([("a", 1), ("b", None), None, ("d", 4)], [10, None, 30, 40])
        typed.settle(lambda: len(typed.received()) == 1)
        batch = typed.received()[0]
        assert batch.values == [("a", 1), ("b", None), None, ("d", 4)] and batch.timestamps == [10, None, 30, 40]
        assert typed.channel.codec.typed
    finally:
        typed.close()
    pickled = Link()
    try:
        values = [{1, 2}, frozenset({"x"}), ("t", [1]), b"bytes"]
        pickled.partition.subpartitions[0].add(values, None)
        pickled.settle(lambda: len(pickled.received()) == 1)
        assert pickled.received()[0].values == values and not pickled.channel.codec.typed
    finally:
        pickled.close()
    assert RecordCodec(Types.PICKLED_BYTE_ARRAY()).typed is False


def test_a_lost_connection_fails_the_consumer_at_once_unless_its_channel_ended(link):
    sub = link.partition.subpartitions[0]
    sub.add(list(range(4)), None)
    link.settle(lambda: len(link.received()) == 1)
    link.server.close()
    for connection in list(link.server.views):
        connection[0].close()
    link.settle(lambda: bool(link.failures))
    [failure] = link.failures
    assert isinstance(failure, RemoteTransportException)
    assert str(failure).startswith(f"Connection unexpectedly closed by remote task manager '{link.server.address}'")


def test_a_producer_that_cannot_be_reached_fails_the_consumer():
    loop = EventLoop(RealtimeClock())
    closed = Server("127.0.0.1", 0, lambda sock: None)
    closed.close()  # nobody listens there any more
    consumer = ShuffleEnvironment(SETTINGS, data_address="127.0.0.1:1", client=PartitionRequestClient(loop))
    consumed = ConsumedInput(0, [("p", 0)], [closed.address], [Edge()])
    gate = consumer.create_input_gate(consumed, 0, Graph(None))
    failures: list = []
    consumer.connect_input_gate(gate, consumed, failures.append)
    assert failures == []  # not while the task initializes: on the loop, right after
    loop.run()
    assert isinstance(failures[0], RemoteTransportException)
    assert str(failures[0]).startswith(f"Connecting to remote task manager '{closed.address}' has failed")
