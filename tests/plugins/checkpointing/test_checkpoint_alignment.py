"""Barrier handling at a task with several input channels, on the simulated clock: aligned
(EXACTLY_ONCE) blocks the channel that delivered the barrier, at-least-once blocks nothing,
unaligned lets the barrier overtake in-flight data (persisted, and replayed on restore), and
the aligned-checkpoint timeout switches a slow alignment to unaligned.

The job: source A emits ``a<i>`` every 10 ms; source B emits ``b<i>`` every 10 ms into SlowB, its
own task, which spends 30 ms on each record and emits it when done (b0 at 30 ms, b1 at 60 ms,
...); both go into Probe, which prints each record with the time it processed it. Checkpoint 1
is triggered at 45 ms (min-pause = interval: Flink's first trigger comes after a random delay
in [min-pause, interval]). Source A's barrier follows a4; source B's follows b4, which is still
queued with b2 and b3 at SlowB (it processes b1 from 30 to 60 ms, b2 from 60, b3 from 90, b4
from 120 ms). Records are one per buffer and flushed at once, so what moves is what the text
says.
"""

from __future__ import annotations

from collections import Counter

from checkpoint_jobs import counted, counts_are_exact, probed
from kernel.runtime.checkpointing.channel_state import persist
from kernel.runtime.streaming.elements import RecordBatch
from plugins.checkpointing.events import (
    CheckpointAcknowledged,
    CheckpointBarrierAligned,
    CheckpointCompleted,
    CheckpointStateRestored,
)
from tests.runtime import run_job

SETTINGS = ("execution.checkpointing.interval=45ms", "execution.checkpointing.min-pause=45ms",
            "execution.buffer-timeout.interval=0ms", "taskmanager.memory.segment-size=32b")
UNALIGNED = ("execution.checkpointing.unaligned.enabled=true",)


def aligned(job, vertex_name, checkpoint_id=1):
    (event,) = [e for e in job.events(CheckpointBarrierAligned)
                if e.vertex_name.startswith(vertex_name) and e.checkpoint_id == checkpoint_id]
    return event


def at_ms(event) -> float:
    return event.time / 1e6


NOT_BLOCKED = ["a0@0", "a1@10", "a2@20", "b0@30", "a3@30", "a4@40", "a5@50", "b1@60", "a6@60", "a7@70", "a8@80",
               "b2@90", "a9@90", "b3@120", "b4@150", "b5@180", "b6@210", "b7@240", "b8@270", "b9@300"]


def test_an_aligned_barrier_blocks_its_channel_until_every_channel_delivered_it():
    job = run_job(probed, *SETTINGS)
    # A's barrier reaches Probe at 45 ms: A's channel is blocked, a5..a9 (made at 50..90 ms) wait
    # upstream while b1..b4 are processed; B's barrier comes behind b4 at 150 ms, Probe
    # checkpoints and A's waiting records follow at once
    assert job.lines == ["a0@0", "a1@10", "a2@20", "b0@30", "a3@30", "a4@40", "b1@60", "b2@90", "b3@120", "b4@150",
                         "a5@150", "a6@150", "a7@150", "a8@150", "a9@150", "b5@180", "b6@210", "b7@240", "b8@270",
                         "b9@300"]
    probe = aligned(job, "Probe")
    assert (at_ms(probe), probe.channels, probe.alignment_ms, probe.processed_records, probe.unaligned) == (
        150.0, 2, 105.0, 4, False)
    assert probe.processed_bytes > 0 and probe.persisted_bytes == 0
    (completed,) = [e for e in job.events(CheckpointCompleted) if e.checkpoint_id == 1]
    assert (at_ms(completed), completed.duration_ms) == (150.0, 105.0)


def test_at_least_once_blocks_no_channel():
    job = run_job(probed, *SETTINGS, "execution.checkpointing.mode=AT_LEAST_ONCE")
    assert job.lines == NOT_BLOCKED
    probe = aligned(job, "Probe")
    # the checkpoint is taken when the last barrier came; a5..a9 and b1..b4 were processed before it
    assert (at_ms(probe), probe.alignment_ms, probe.processed_records, probe.unaligned) == (150.0, 105.0, 9, False)


def test_an_unaligned_barrier_overtakes_in_flight_data_which_is_persisted():
    job = run_job(probed, *SETTINGS, *UNALIGNED)
    assert job.lines == NOT_BLOCKED  # nothing waits
    # SlowB takes the priority barrier at 60 ms, when it is done with b1: b2..b4 in its input
    # channel were overtaken and are persisted, and so is b1, emitted at 60 ms and in Probe's
    # input channel when the barrier overtakes it; Probe's alignment ends then (45 -> 60 ms)
    slow_b, probe = aligned(job, "SlowB"), aligned(job, "Probe")
    overtaken = sum(len(persist(RecordBatch([("b", i)], None))) for i in (2, 3, 4))
    assert (at_ms(slow_b), slow_b.unaligned, slow_b.persisted_bytes) == (60.0, True, overtaken)
    b1 = len(persist(RecordBatch([("b", 1)], None)))
    assert (at_ms(probe), probe.alignment_ms, probe.processed_records, probe.unaligned, probe.persisted_bytes) == (
        60.0, 15.0, 1, True, b1)
    acks = {e.vertex_name: e for e in job.events(CheckpointAcknowledged) if e.checkpoint_id == 1}
    assert acks["SlowB"].persisted_bytes == overtaken and acks["SlowB"].unaligned
    (completed,) = [e for e in job.events(CheckpointCompleted) if e.checkpoint_id == 1]
    assert (at_ms(completed), completed.duration_ms) == (60.0, 15.0)


def test_an_alignment_that_takes_longer_than_the_timeout_switches_to_unaligned():
    job = run_job(probed, *SETTINGS, *UNALIGNED, "execution.checkpointing.aligned-checkpoint-timeout=30ms")
    # aligned at first: A's channel is blocked from 45 ms; at 75 ms (trigger + 30 ms) Probe
    # switches: it checkpoints, A's waiting a5..a7 go on, B's data is persisted until its barrier
    assert job.lines == ["a0@0", "a1@10", "a2@20", "b0@30", "a3@30", "a4@40", "b1@60", "a5@75", "a6@75", "a7@75",
                         "a8@80", "b2@90", "a9@90", "b3@120", "b4@150", "b5@180", "b6@210", "b7@240", "b8@270",
                         "b9@300"]
    # SlowB learnt of its barrier from the announcement at 45 ms; busy until 90 ms, it switches
    # then: b3 and b4 (before the barrier in its channel) are persisted and the barrier
    # overtakes them, reaching Probe at 90 ms
    probe, slow_b = aligned(job, "Probe"), aligned(job, "SlowB")
    assert (at_ms(probe), probe.unaligned, probe.alignment_ms, probe.processed_records) == (90.0, True, 45.0, 5)
    overtaken = sum(len(persist(RecordBatch([("b", i)], None))) for i in (3, 4))
    assert (slow_b.unaligned, slow_b.persisted_bytes) == (True, overtaken)


def test_an_alignment_within_the_timeout_stays_aligned():
    job = run_job(probed, *SETTINGS, *UNALIGNED, "execution.checkpointing.aligned-checkpoint-timeout=200ms")
    assert job.lines == run_job(probed, *SETTINGS).lines
    assert not any(e.unaligned or e.persisted_bytes for e in job.events(CheckpointBarrierAligned))


def test_persisted_in_flight_data_is_replayed_on_restore():
    """Count fails on its 12th record (b2, at 90 ms), after checkpoint 1 (unaligned, complete at
    60 ms) and before checkpoint 2 (105 ms): the job restarts from checkpoint 1, SlowB processes
    the persisted b2..b4 again before B's records from position 5 on, Count the persisted b1,
    and every count is still exact."""
    plain = run_job(counted, *SETTINGS, *UNALIGNED)
    job = run_job(counted, *SETTINGS, *UNALIGNED, faults=["raise:operator=Count,record=12"])
    assert counts_are_exact(plain.lines) and counts_are_exact(job.lines)
    assert set(job.lines) == set(plain.lines)
    # printed twice: what Count emitted after checkpoint 1 and before it failed (print is
    # at-least-once), i.e. a5, b1, a6, a7, a8
    assert sorted(line for line, n in Counter(job.lines).items() if n == 2) == [
        "a5 count=6", "a6 count=7", "a7 count=8", "a8 count=9", "b1 count=2"]
    restored = {e.vertex_name: e for e in job.events(CheckpointStateRestored)}
    assert {name: e.checkpoint_id for name, e in restored.items()} == {
        "Source: A": 1, "Source: B": 1, "SlowB": 1, "Count -> Sink: Print to Std. Out": 1}
    assert restored["SlowB"].state_size > aligned(plain, "SlowB").persisted_bytes > 0


def test_aligned_restore_is_exactly_once_too():
    plain = run_job(counted, *SETTINGS)
    job = run_job(counted, *SETTINGS, faults=["raise:operator=Count,record=12"])
    assert counts_are_exact(job.lines) and set(job.lines) == set(plain.lines)
