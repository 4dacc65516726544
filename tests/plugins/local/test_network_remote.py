"""Channels between TaskExecutors over TCP (plugins/local/network/remote.py, wire.py): a
producer's partition request server and a consumer's client on 127.0.0.1, real sockets, one
event loop (as two TaskExecutors of one process would have it). Credits, backlog and floating
buffers as Flink's; barriers block until resumed; every event crosses with its fields; unaligned
barriers overtake what waits for credit, an announced barrier still at the producer is
converted at the consumer's request with the data it overtakes, restored in-flight buffers take
no credit; records typed or pickled; a lost connection fails the consumer."""

from __future__ import annotations

import pytest

from kernel.clock import NS_PER_MS, RealtimeClock
from kernel.common import Types
from kernel.loop import EventLoop
from kernel.runtime.checkpointing.channel_state import restore
from kernel.runtime.streaming.elements import (
    END_OF_DATA,
    BarrierAnnouncement,
    CancelCheckpointMarker,
    CheckpointBarrier,
    EndOfData,
    LatencyMarker,
    RecordBatch,
    Watermark,
    WatermarkStatus,
)
from kernel.remoting.security import TransportSecurity, new_secret
from kernel.remoting.tcp import Server
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

SECURITY = TransportSecurity(new_secret())
SETTINGS = NetworkSettings(buffers_per_channel=2, floating_buffers_per_gate=8, max_buffers_per_channel=10,
                           records_per_buffer=4)


class Edge:
    output_tag = None
    source_id = 1


class Graph:
    def __init__(self, output_type) -> None:
        self.nodes = {1: type("Node", (), {"output_type": output_type})()}


def settle(loop: EventLoop, done) -> None:
    """Run the loop until ``done()`` (checked every few ms; a test fails after 10 s)."""
    deadline = loop.clock.now() + 10_000 * NS_PER_MS

    def check() -> None:
        if done() or loop.clock.now() > deadline:
            loop.stop()
        else:
            loop.call_later(2 * NS_PER_MS, check)

    loop.call_soon(check)
    loop.run()
    assert done()


class Link:
    """A producer TaskExecutor (server, partition "p") and a consumer one (client, gate)."""

    def __init__(self, output_type=None, restored: list | None = None) -> None:
        self.loop = EventLoop(RealtimeClock())
        self.loop.io_started()  # frames come from the sockets' threads
        self.producer = ShuffleEnvironment(SETTINGS)
        self.server = PartitionRequestServer(self.producer, self.loop, "127.0.0.1", SECURITY)
        self.partition = ResultPartition("p", 1, SETTINGS, False, output_type, lock=self.producer.lock)
        self.producer.register_partition(self.partition)
        self.consumer = ShuffleEnvironment(SETTINGS, data_address="127.0.0.1:1",
                                           client=PartitionRequestClient(self.loop, SECURITY))
        consumed = ConsumedInput(0, [("p", 0)], [self.server.address], [Edge()])
        self.gate = self.consumer.create_input_gate(consumed, 0, Graph(output_type))
        self.failures: list[BaseException] = []
        self.channel = self.gate.channels[0]
        if restored is not None:  # in-flight data of an unaligned checkpoint, before the request
            self.channel.restore_in_flight(restored)
        self.consumer.connect_input_gate(self.gate, consumed, self.failures.append)

    def settle(self, done) -> None:
        settle(self.loop, done)

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
    link.settle(lambda: sub.queued_buffers == 7 and len(link.received()) == 10)  # sent, then received
    assert link.gate.floating_free == 0 and link.channel.waiting


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


def test_every_event_crosses_with_what_it_carries(link):
    sub = link.partition.subpartitions[0]
    events = [WatermarkStatus(True), LatencyMarker(7, "ab" * 16, 1), CancelCheckpointMarker(3),
              CheckpointBarrier(4, 100, aligned=False), EndOfData(drain=False, stop=True), END_OF_DATA]
    for event in events:
        sub.add_event(event)
    # an aligned barrier with an alignment timeout is announced ahead (a priority event), and it
    # names the savepoint directory the tasks write to
    sub.add_event(CheckpointBarrier(5, 200, aligned=True, alignment_timeout=50, location="/sp/savepoint-1"))
    link.settle(lambda: len(link.received()) == len(events) + 1)
    received = link.received()
    assert [repr(e) for e in received] == [repr(e) for e in events] + ["CheckpointBarrier(5, aligned, timeout 50 ms)"]
    marker, stopped, barrier = received[1], received[4], received[6]
    assert (marker.marked_time, marker.operator_id, marker.subtask) == (7, "ab" * 16, 1)
    assert (stopped.drain, stopped.stop) == (False, True) and received[5] is END_OF_DATA
    assert (barrier.timestamp, barrier.location) == (200, "/sp/savepoint-1") and barrier.blocks and sub.blocked
    [announcement] = link.channel.priority
    assert isinstance(announcement, BarrierAnnouncement) and announcement.barrier.alignment_timeout == 50


def test_an_unaligned_barrier_overtakes_the_buffers_waiting_for_credit(link):
    sub = link.partition.subpartitions[0]
    sub.add(list(range(4 * 14)), None)  # 10 buffers get credit, 4 wait at the producer
    link.settle(lambda: len(link.received()) == 10)
    [overtaken] = link.partition.broadcast_priority_event(CheckpointBarrier(1, 100, aligned=True, unaligned=True))
    assert [restore(data).values for data in overtaken] == [list(range(i, i + 4)) for i in range(40, 56, 4)]
    link.settle(lambda: bool(link.channel.priority))
    [barrier] = link.channel.priority
    assert repr(barrier) == "CheckpointBarrier(1, unaligned)"
    # the barrier's mark in the channel's queue comes after what had arrived; the overtaken
    # buffers follow as they get credit
    assert repr(link.received()[-1]) == "CheckpointBarrier(1, unaligned)" and link.channel.barrier_seen == 1
    assert sub.queued_buffers == 4


def test_a_consumer_converts_an_announced_barrier_still_queued_at_the_producer(link):
    sub = link.partition.subpartitions[0]
    sub.add(list(range(4 * 14)), None)
    sub.add_event(CheckpointBarrier(1, 100, aligned=True, alignment_timeout=50))
    link.settle(lambda: len(link.received()) == 10 and bool(link.channel.priority))
    channel = link.channel
    # the alignment timed out: the channel persists what it holds and asks the producer for the
    # barrier, which overtakes the 4 buffers still there; they are persisted with the rest
    channel.start_persisting(1)
    channel.convert_to_priority(1)
    link.settle(lambda: len(channel.priority) == 2)
    assert [repr(e) for e in channel.priority] == ["BarrierAnnouncement(1)", "CheckpointBarrier(1, unaligned)"]
    assert [restore(data).values for data in channel.finish_persisting()] == [
        list(range(i, i + 4)) for i in range(0, 56, 4)]
    assert not any(type(item) is CheckpointBarrier for item in sub.queue) and sub.queued_buffers == 4
    link.process(10)
    link.settle(lambda: sub.queued_buffers == 0)  # the overtaken buffers are still sent, and processed


def test_restored_in_flight_buffers_come_first_and_give_no_credit_back():
    link = Link(restored=[RecordBatch([-2, -1], None), Watermark(3)])
    try:
        sub, channel = link.partition.subpartitions[0], link.channel
        sub.add(list(range(4 * 12)), None)  # 2 exclusive credits, then 8 floating for the backlog
        link.settle(lambda: len(link.received()) == 12)
        assert [repr(e) for e in link.received()[:2]] == ["RecordBatch(2 records)", "Watermark(3)"]
        assert channel.available == 0 and link.gate.floating_free == 0 and sub.queued_buffers == 2
        link.process(1)  # the restored buffer took no credit: none is announced, no buffer is freed
        assert channel.available == 0 and link.gate.floating_free == 0
        link.gate.poll()
        link.process(1)  # an exclusive buffer: its credit is announced again
        assert channel.available == 1
        link.settle(lambda: sub.queued_buffers == 1)
    finally:
        link.close()


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


def test_a_lost_connection_fails_a_task_reading_two_channels_on_it_once():
    """The task fails on its first channel and releases its gate (cancelling the other)."""
    loop = EventLoop(RealtimeClock())
    loop.io_started()
    producer = ShuffleEnvironment(SETTINGS)
    server = PartitionRequestServer(producer, loop, "127.0.0.1", SECURITY)
    partition = ResultPartition("p", 2, SETTINGS, False)
    producer.register_partition(partition)
    consumer = ShuffleEnvironment(SETTINGS, data_address="127.0.0.1:1", client=PartitionRequestClient(loop, SECURITY))
    consumed = ConsumedInput(0, [("p", 0), ("p", 1)], [server.address] * 2, [Edge(), Edge()])
    gate = consumer.create_input_gate(consumed, 0, Graph(None))
    failures: list = []

    def fail(error: BaseException) -> None:  # what a StreamTask does: fail, release its gates
        failures.append(error)
        consumer.release_input_gate(gate)

    consumer.connect_input_gate(gate, consumed, fail)
    try:
        for subpartition in partition.subpartitions:
            subpartition.add([1], None)
            subpartition.flush()
        settle(loop, lambda: all(channel.queue for channel in gate.channels))
        server.close()
        for connection, _ in list(server.views):
            connection.close()
        settle(loop, lambda: bool(failures) and not consumer.client.connections)
        assert len(failures) == 1 and isinstance(failures[0], RemoteTransportException)
    finally:
        server.close()
        consumer.client.close()


def test_a_producer_that_cannot_be_reached_fails_the_consumer():
    loop = EventLoop(RealtimeClock())
    closed = Server("127.0.0.1", 0, lambda connection, frames: None, lambda connection, error: None, "partition",
                    SECURITY)
    closed.close()  # nobody listens there any more
    consumer = ShuffleEnvironment(SETTINGS, data_address="127.0.0.1:1", client=PartitionRequestClient(loop, SECURITY))
    consumed = ConsumedInput(0, [("p", 0)], [closed.address], [Edge()])
    gate = consumer.create_input_gate(consumed, 0, Graph(None))
    failures: list = []
    consumer.connect_input_gate(gate, consumed, failures.append)
    assert failures == []  # not while the task initializes: on the loop, right after
    loop.run()
    assert isinstance(failures[0], RemoteTransportException)
    assert str(failures[0]).startswith(f"Connecting to remote task manager '{closed.address}' has failed")


def test_a_malformed_frame_from_a_task_executor_of_the_run_drops_its_connection_not_the_task_executor(
        link, monkeypatch):
    """What no TaskExecutor sends, from a peer that proved the run's secret (a bug, a compromised
    worker): its connection is dropped and reported; the producer serves its consumers on."""
    import msgspec

    from kernel.remoting.tcp import connect

    rejections: list[tuple] = []
    monkeypatch.setattr(SECURITY, "on_rejected", lambda *rejection: rejections.append(rejection))
    frames = {
        "not msgpack": b"\xc1",
        "short request": msgspec.msgpack.encode(["req"]),
        "unknown kind": msgspec.msgpack.encode(["zzz", 1]),
        "typed wrong": msgspec.msgpack.encode(["req", 1, 5, 0, 2]),
        "credit of what": msgspec.msgpack.encode(["credit", [1], 1]),
    }
    peers = {}
    for name, frame in frames.items():
        attacker = connect(link.server.address, lambda c, f: None, lambda c, e: None, "partition", SECURITY)
        peers[attacker.address] = name
        attacker.send(frame)
    link.settle(lambda: len(rejections) == len(frames))
    assert all(role == "partition" and address == link.server.address for role, address, _, _ in rejections)
    assert {peers[peer]: reason for _, _, peer, reason in rejections} == {
        "not msgpack": "malformed frame: DecodeError: MessagePack data is malformed: invalid opcode '\\xc1' (byte 0)",
        "short request": "malformed frame: IndexError: list index out of range",
        "unknown kind": "malformed frame: ValueError: unknown frame kind 'zzz'",
        "typed wrong": "malformed frame: ValueError: request ['req', 1, 5, 0, 2]",
        "credit of what": "malformed frame: ValueError: receiver id [1]",
    }
    link.partition.subpartitions[0].add(list(range(4)), None)
    link.settle(lambda: len(link.received()) == 1)
    assert link.received()[0].values == [0, 1, 2, 3] and link.failures == []


def test_a_malformed_frame_from_a_producer_fails_the_consumer_as_a_lost_connection(monkeypatch):
    """A consumer's TaskExecutor is not killed by what a producer sends: the connection is
    dropped (reported) and its channels fail, as if it broke."""
    import msgspec

    rejections: list[tuple] = []
    monkeypatch.setattr(SECURITY, "on_rejected", lambda *rejection: rejections.append(rejection))
    loop = EventLoop(RealtimeClock())
    loop.io_started()

    def answer(connection, frames) -> None:  # a producer that answers a request with nonsense
        connection.send(msgspec.msgpack.encode(["evt", msgspec.msgpack.decode(frames[0])[1], "?"]))

    producer = Server("127.0.0.1", 0, answer, lambda c, e: None, "partition", SECURITY)
    consumer = ShuffleEnvironment(SETTINGS, data_address="127.0.0.1:1", client=PartitionRequestClient(loop, SECURITY))
    consumed = ConsumedInput(0, [("p", 0)], [producer.address], [Edge()])
    gate = consumer.create_input_gate(consumed, 0, Graph(None))
    failures: list = []
    consumer.connect_input_gate(gate, consumed, failures.append)
    settle(loop, lambda: bool(failures))
    assert isinstance(failures[0], RemoteTransportException)
    assert str(failures[0]).startswith(f"Lost connection to remote task manager '{producer.address}'")
    [(role, address, peer, reason)] = rejections
    assert role == "partition" and peer == producer.address
    assert reason == "malformed frame: ValueError: unknown network event ['?']"
    producer.close()
    consumer.client.close()
