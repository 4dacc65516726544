"""Credit-based flow control between result partitions and input gates."""

from __future__ import annotations

from kernel.runtime.streaming.elements import END_OF_PARTITION, RecordBatch, Watermark
from plugins.local.network.input_gate import InputGate
from plugins.local.network.partition import ResultPartition
from plugins.local.network.shuffle import NetworkSettings, ShuffleEnvironment

SETTINGS = NetworkSettings(buffers_per_channel=2, floating_buffers_per_gate=1, max_buffers_per_channel=10,
                           records_per_buffer=4)


def connect(subpartitions: int = 1, blocking: bool = False):
    shuffle = ShuffleEnvironment(SETTINGS)
    partition = ResultPartition("p", subpartitions, SETTINGS, blocking)
    gate = InputGate(subpartitions, SETTINGS)
    shuffle.register_partition(partition)
    for i, channel in enumerate(gate.channels):
        shuffle.register_channel("p", i, channel)
    return partition, gate


def drain(gate: InputGate, recycle: bool = True) -> list:
    items = []
    while gate.has_data():
        channel, item = gate.poll()
        items.append(item)
        if recycle and isinstance(item, RecordBatch):
            channel.recycle()
    return items


def test_full_buffers_are_sent_while_the_receiver_has_credit():
    partition, gate = connect()
    partition.subpartitions[0].add(list(range(10)), None)  # two full buffers, two left open
    received = drain(gate, recycle=False)
    assert [b.values for b in received] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert partition.in_use == 1  # the open buffer


def test_without_credit_buffers_wait_and_the_writer_turns_unavailable():
    partition, gate = connect()
    capacity = partition.capacity  # 1 subpartition x 2 + 1 floating = 3
    assert capacity == 3
    sub = partition.subpartitions[0]
    sub.add(list(range(4 * 6)), None)  # 6 buffers: 3 credits (2 exclusive + 1 floating) used
    assert len(gate.channels[0].queue) == 3
    assert partition.in_use == 3 and not partition.is_available()
    resumed = []
    partition.when_available(lambda: resumed.append(True))
    channel, item = gate.poll()
    assert resumed == []  # not yet recycled
    channel.recycle()
    assert resumed == [True] and partition.in_use == 2


def test_events_need_no_credit_but_never_overtake_buffers():
    partition, gate = connect()
    sub = partition.subpartitions[0]
    sub.add(list(range(4 * 4)), None)  # 4 buffers, credit for 3
    sub.add_event(Watermark(7))
    first = drain(gate, recycle=False)
    assert len(first) == 3  # the 4th buffer and the watermark behind it wait
    channel = gate.channels[0]
    for _ in range(3):
        channel.recycle()
    rest = drain(gate)
    assert [type(x).__name__ for x in rest] == ["RecordBatch", "Watermark"]


def test_flush_sends_a_partial_buffer_and_finish_ends_the_partition():
    partition, gate = connect()
    partition.subpartitions[0].add([1, 2], [10, 20])
    partition.flush_all()
    partition.finish()
    items = drain(gate)
    assert items[0].values == [1, 2] and items[0].timestamps == [10, 20]
    assert items[1] is END_OF_PARTITION


def test_blocking_partitions_send_nothing_until_finished():
    partition, gate = connect(blocking=True)
    partition.subpartitions[0].add(list(range(100)), None)
    assert not gate.has_data() and partition.is_available()  # unbounded: the producer never waits
    partition.finish()
    items = drain(gate)
    assert sum(len(b) for b in items if isinstance(b, RecordBatch)) == 100 and items[-1] is END_OF_PARTITION


def test_gate_polls_channels_round_robin():
    partition, gate = connect(subpartitions=2)
    for index in (0, 1):
        partition.subpartitions[index].add([index] * 8, None)
    order = [item.values[0] for item in drain(gate)]
    assert order == [0, 1, 0, 1]


def test_a_batch_filling_exactly_one_buffer_is_that_buffer():
    partition, gate = connect()
    values, timestamps = [1, 2, 3, 4], [10, 20, 30, 40]
    partition.subpartitions[0].add(values, timestamps)
    (buffer,) = drain(gate, recycle=False)
    assert buffer.values is values and buffer.timestamps is timestamps  # no copy
    assert partition.in_use == 0 and partition.subpartitions[0].values is None


def test_buffers_are_the_same_however_the_batches_fill_them():
    """Exactly one buffer at once, or a batch that opens a buffer, or one that adds to it: the
    buffers sent and the buffers in use are what filling them record by record gives."""
    seen = []
    for batches in ([[0, 1, 2, 3], [4, 5], [6, 7, 8, 9, 10]], [[0, 1], [2, 3, 4, 5, 6, 7], [8, 9, 10]],
                    [[i] for i in range(11)]):
        partition, gate = connect()
        for batch in batches:
            partition.subpartitions[0].add(batch, None)
        sent = [b.values for b in drain(gate, recycle=False)]
        seen.append((sent, partition.in_use, partition.subpartitions[0].values))
    assert seen == [([[0, 1, 2, 3], [4, 5, 6, 7]], 1, [8, 9, 10])] * 3


def test_a_producer_and_a_consumer_in_threads_of_their_own_hand_over_every_record_in_order():
    """Realtime tasks: each end in its thread, stepping its own loop; buffers, credit and the
    availability callbacks cross under the network's lock, each callback in its owner's thread."""
    import threading

    from kernel.clock import RealtimeClock
    from kernel.loop import EventLoop

    settings = NetworkSettings(buffers_per_channel=2, floating_buffers_per_gate=1, max_buffers_per_channel=2,
                               records_per_buffer=16)
    clock = RealtimeClock()
    shuffle = ShuffleEnvironment(settings)
    producer_loop, consumer_loop = EventLoop(clock, bound=False), EventLoop(clock, bound=False)
    partition = ResultPartition("p", 1, settings, False, lock=shuffle.lock, loop=producer_loop)
    gate = InputGate(1, settings, 0, shuffle.lock, consumer_loop)
    total, batch = 16_000, 10
    received: list[int] = []
    waits = {"producer": 0, "consumer": 0}
    wrong_thread: list[str] = []

    def woken(name, loop, then):
        def callback():
            if not loop.in_thread():
                wrong_thread.append(name)
            then()
        return callback

    def produce(start=0):
        if not partition.is_available():
            waits["producer"] += 1
            partition.when_available(woken("producer", producer_loop, lambda: produce(start)))
            return
        if start >= total:
            partition.finish()
            producer_loop.io_finished()
            return
        partition.subpartitions[0].add(list(range(start, start + batch)), None)
        producer_loop.call_soon(produce, start + batch)

    def consume():
        polled = gate.poll()
        if polled is None:
            waits["consumer"] += 1
            gate.when_available(woken("consumer", consumer_loop, consume))
            return
        channel, item = polled
        if item is END_OF_PARTITION:
            consumer_loop.io_finished()
            return
        received.extend(item.values)
        channel.recycle()
        consumer_loop.call_soon(consume)

    threads = []
    for loop, start in ((consumer_loop, consume), (producer_loop, produce)):
        loop.io_started()  # each runs until its end finished
        loop.call_soon(start)
        threads.append(threading.Thread(target=loop.run, daemon=True))
    shuffle.register_channel("p", 0, gate.channels[0])
    for thread in threads:
        thread.start()
    shuffle.register_partition(partition)
    for thread in threads:
        thread.join(timeout=60)
    assert received == list(range(total))
    assert waits["producer"] > 0 and waits["consumer"] > 0  # both had to wait for the other
    assert wrong_thread == []
    assert partition.in_use == 0 and gate.channels[0].exclusive_free == 2 and gate.floating_free == 1


def test_an_unaligned_barrier_from_another_thread_reaches_the_consumers_priority_listener_in_its_thread():
    """Realtime tasks: the producer (here the test's thread) sends a priority barrier under the
    network's lock; the consumer's task hears of it in its own thread, ahead of the buffers
    queued for it, and the producer gets the buffers it overtook to persist."""
    import threading

    from kernel.runtime.checkpointing.channel_state import restore
    from kernel.clock import RealtimeClock
    from kernel.loop import EventLoop
    from kernel.runtime.streaming.elements import CheckpointBarrier

    shuffle = ShuffleEnvironment(SETTINGS)
    consumer_loop = EventLoop(RealtimeClock(), bound=False)
    partition = ResultPartition("p", 1, SETTINGS, False, lock=shuffle.lock)
    gate = InputGate(1, SETTINGS, 0, shuffle.lock, consumer_loop)
    heard: list[tuple[bool, object, int]] = []

    def listener():
        _, event = gate.poll_priority()
        heard.append((consumer_loop.in_thread(), event, len(gate.channels[0].queue)))
        consumer_loop.io_finished()

    gate.priority_listener = listener
    shuffle.register_partition(partition)
    shuffle.register_channel("p", 0, gate.channels[0])
    consumer_loop.io_started()  # runs until it heard of the barrier
    consumer = threading.Thread(target=consumer_loop.run, daemon=True)
    consumer.start()
    partition.subpartitions[0].add(list(range(20)), None)  # 5 buffers: 3 have credit, 2 wait
    [overtaken] = partition.broadcast_priority_event(CheckpointBarrier(1, 0, True, True))
    consumer.join(timeout=60)
    [(in_thread, event, queued)] = heard
    assert in_thread and repr(event) == "CheckpointBarrier(1, unaligned)"
    assert queued == 4  # the 3 buffers sent before it, then its mark
    assert [restore(data).values for data in overtaken] == [[12, 13, 14, 15], [16, 17, 18, 19]]
    received = drain(gate)
    assert [repr(item) if isinstance(item, CheckpointBarrier) else item.values[0] for item in received] == [
        0, 4, 8, "CheckpointBarrier(1, unaligned)", 12, 16]


def test_a_barrier_whose_mark_was_taken_before_its_priority_event_was_handled_leaves_nothing_in_flight():
    """With the producer in another thread, the consumer may take an unaligned barrier's mark
    from the queue (and everything before it) before it handles the barrier's priority event:
    what is queued then came after the barrier and is not in flight for its checkpoint."""
    from kernel.runtime.checkpointing.channel_state import restore
    from kernel.runtime.streaming.elements import CheckpointBarrier

    partition, gate = connect()
    subpartition, channel = partition.subpartitions[0], gate.channels[0]
    subpartition.add([0, 1, 2, 3], None)
    partition.broadcast_priority_event(CheckpointBarrier(1, 0, True, True))
    subpartition.add([4, 5, 6, 7], None)
    taken = drain(gate)  # the consumer took the mark, and what came before and after it
    assert [repr(item) if isinstance(item, CheckpointBarrier) else item.values[0] for item in taken] == [
        0, "CheckpointBarrier(1, unaligned)", 4]
    subpartition.add([8, 9, 10, 11], None)
    channel.start_persisting(1)
    assert channel.finish_persisting() == [] and channel.persisting == 0
    # a channel whose barrier has not come persists what is queued and what arrives until it comes
    channel.start_persisting(2)
    subpartition.add([12, 13, 14, 15], None)
    partition.broadcast_priority_event(CheckpointBarrier(2, 0, True, True))
    subpartition.add([16, 17, 18, 19], None)
    assert [restore(data).values for data in channel.finish_persisting()] == [[8, 9, 10, 11], [12, 13, 14, 15]]
