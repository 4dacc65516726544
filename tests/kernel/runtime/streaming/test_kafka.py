"""Kafka in and out (``kernel.datastream.connectors.kafka``), against librdkafka's mock cluster
over TCP (the session's ``kafka_cluster`` fixture): a PyFlink job ported by its imports, Flink's
partition assignment and discovery, per-partition watermarks, offsets in checkpoints and
commits, and the sink's delivery guarantees under failures on every worker kind."""

from __future__ import annotations

import itertools
import textwrap
import uuid
from collections import Counter

import pytest

from kernel.common import Types, WatermarkStrategy
from kernel.common.serialization import SimpleStringSchema
from kernel.datastream.connectors.kafka import (
    DeliveryGuarantee,
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from kernel.datastream.functions import MapFunction
from kernel.runtime.kafka_events import (
    KafkaOffsetsCommitted,
    KafkaOffsetsConsumed,
    KafkaPartitionsDiscovered,
    KafkaSplitsAssigned,
    KafkaTransactionChanged,
)
from kernel.runtime.streaming.kafka.assignment import java_string_hash, split_owner
from tests.kafka_mock import end_offsets, produce, read_topic
from tests.runtime import run_job

REALTIME = ("rill.clock=realtime",)


def topic(name: str) -> str:
    """A topic of its own for each test (the cluster lives for the session)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def lines_source(servers: str, source_topic: str, bounded: bool = True, **properties: str) -> KafkaSource:
    builder = KafkaSource.builder().set_bootstrap_servers(servers).set_topics(source_topic) \
        .set_group_id(f"g-{source_topic}").set_starting_offsets(KafkaOffsetsInitializer.earliest()) \
        .set_value_only_deserializer(SimpleStringSchema()).set_property("fetch.wait.max.ms", "5")
    if bounded:
        builder.set_bounded(KafkaOffsetsInitializer.latest())
    for key, value in properties.items():
        builder.set_property(key, value)
    return builder.build()


def lines_sink(servers: str, sink_topic: str, guarantee: DeliveryGuarantee) -> KafkaSink:
    serializer = KafkaRecordSerializationSchema.builder().set_topic(sink_topic) \
        .set_value_serialization_schema(SimpleStringSchema()).build()
    return KafkaSink.builder().set_bootstrap_servers(servers).set_record_serializer(serializer) \
        .set_delivery_guarantee(guarantee).set_transactional_id_prefix(f"tx-{sink_topic}").build()


# -- Flink's split owner ------------------------------------------------------------------------


def test_java_string_hash_and_flinks_split_owner():
    assert java_string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert java_string_hash("") == 0
    assert java_string_hash("a-rather-long-topic-name") == 996987977
    assert java_string_hash("ünïcode-😀") == 1630115430  # UTF-16 code units, as Java (values from jshell)
    # ((hashCode * 31) & 0x7FFFFFFF) % n is where partition 0 goes, the others clockwise
    start = ((99162322 * 31) & 0x7FFFFFFF) % 3
    assert [split_owner("hello", p, 3) for p in range(6)] == [(start + p) % 3 for p in range(6)]


# -- a PyFlink job ported by its imports --------------------------------------------------------

PYFLINK_WORD_COUNT = """
import sys

from pyflink.common import SimpleStringSchema, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.base import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import (KafkaOffsetsInitializer, KafkaRecordSerializationSchema, KafkaSink,
                                                 KafkaSource)

servers, source_topic, sink_topic = sys.argv[1:4]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(300)
source = KafkaSource.builder() \\
    .set_bootstrap_servers(servers) \\
    .set_topics(source_topic) \\
    .set_group_id("word-count") \\
    .set_starting_offsets(KafkaOffsetsInitializer.earliest()) \\
    .set_bounded(KafkaOffsetsInitializer.latest()) \\
    .set_value_only_deserializer(SimpleStringSchema()) \\
    .build()
sink = KafkaSink.builder() \\
    .set_bootstrap_servers(servers) \\
    .set_record_serializer(KafkaRecordSerializationSchema.builder()
                           .set_topic(sink_topic)
                           .set_value_serialization_schema(SimpleStringSchema())
                           .build()) \\
    .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE) \\
    .set_transactional_id_prefix("word-count-" + sink_topic) \\
    .build()
ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka Source")
ds.flat_map(lambda line: [(word, 1) for word in line.split()],
            output_type=Types.TUPLE([Types.STRING(), Types.INT()])) \\
    .key_by(lambda pair: pair[0]) \\
    .reduce(lambda a, b: (a[0], a[1] + b[1])) \\
    .map(lambda pair: f"{pair[0]}: {pair[1]}", output_type=Types.STRING()) \\
    .sink_to(sink)
env.execute("kafka word count")
"""

TEXT = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
    "And by opposing end them?--To die,--to sleep,--",
    "No more; and by a sleep to say we end",
]


def running_counts(lines: list[str]) -> Counter:
    """What a keyed reduce of (word, 1) emits: each word's count after each of its records."""
    counts: Counter = Counter()
    out: Counter = Counter()
    for line in lines:
        for word in line.split():
            counts[word] += 1
            out[f"{word}: {counts[word]}"] += 1
    return out


@pytest.mark.parametrize("workers", ["embedded", "processes"])
def test_a_pyflink_kafka_word_count_ported_by_its_imports(kafka_cluster, shell, tmp_path, workers):
    source_topic, sink_topic = topic("words"), topic("counts")
    produce(kafka_cluster, source_topic, [(line, i % 4) for i, line in enumerate(TEXT * 3)])
    job = tmp_path / "word_count.py"
    job.write_text(PYFLINK_WORD_COUNT.replace("from pyflink.", "from kernel."))
    code, out, err = shell("run", "--quiet", "--set", f"plugins.workers={workers}", str(job), kafka_cluster,
                           source_topic, sink_topic)
    assert code == 0, err
    written = [value for _, _, value in read_topic(kafka_cluster, sink_topic)]
    assert Counter(written) == running_counts(TEXT * 3)  # each word's counts, each once


# -- the source ---------------------------------------------------------------------------------


def test_partitions_go_to_their_owner_subtasks_from_the_starting_offsets(kafka_cluster):
    source_topic = topic("owners")
    produce(kafka_cluster, source_topic, [(f"{p}-{i}", p) for p in range(4) for i in range(5)])
    got: list[str] = []

    def build(env):
        env.set_parallelism(3)
        source = KafkaSource.builder().set_bootstrap_servers(kafka_cluster).set_topics(source_topic) \
            .set_group_id("owners").set_value_only_deserializer(SimpleStringSchema()) \
            .set_starting_offsets(KafkaOffsetsInitializer.offsets({}, )) \
            .set_bounded(KafkaOffsetsInitializer.latest()).build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").add_sink(got.append)
        env.execute()

    run = run_job(build, *REALTIME)
    assert sorted(got) == sorted(f"{p}-{i}" for p in range(4) for i in range(5))
    assigned = {(e.subtask, name, start, stop) for e in run.events(KafkaSplitsAssigned)
                for name, start, stop in zip(e.partitions, e.start_offsets, e.stop_offsets)}
    assert assigned == {(split_owner(source_topic, p, 3), f"{source_topic}-{p}", 0, 5) for p in range(4)}
    discovered = run.events(KafkaPartitionsDiscovered)
    assert {e.subtask for e in discovered} == {0, 1, 2}
    assert all(e.total == 4 and e.initial for e in discovered)
    consumed = {(name, first, nxt) for e in run.events(KafkaOffsetsConsumed)
                for name, first, nxt in zip(e.partitions, e.first_offsets, e.next_offsets)}
    assert {(f"{source_topic}-{p}", 0, 5) for p in range(4)} <= consumed


def test_offsets_initializers_start_and_stop_where_flink_does(kafka_cluster):
    source_topic = topic("initializers")
    produce(kafka_cluster, source_topic, [(f"{p}-{i}", p) for p in range(4) for i in range(4)])

    def read(starting, stopping=KafkaOffsetsInitializer.latest(), group="g"):
        got: list[str] = []

        def build(env):
            source = KafkaSource.builder().set_bootstrap_servers(kafka_cluster).set_topics(source_topic) \
                .set_group_id(group).set_value_only_deserializer(SimpleStringSchema()) \
                .set_starting_offsets(starting).set_bounded(stopping).build()
            env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").add_sink(got.append)
            env.execute()

        run_job(build, *REALTIME)
        return sorted(got)

    from kernel.datastream.connectors.kafka import KafkaOffsetResetStrategy, KafkaTopicPartition

    assert read(KafkaOffsetsInitializer.latest()) == []
    assert read(KafkaOffsetsInitializer.offsets({KafkaTopicPartition(source_topic, 1): 3},
                                                KafkaOffsetResetStrategy.LATEST)) == ["1-3"]
    assert read(KafkaOffsetsInitializer.earliest(),
                KafkaOffsetsInitializer.offsets({KafkaTopicPartition(source_topic, p): 1 for p in range(4)})) == \
        ["0-0", "1-0", "2-0", "3-0"]
    assert read(KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST), group="fresh") == \
        sorted(f"{p}-{i}" for p in range(4) for i in range(4))


class Slow(MapFunction):
    """Sleeps a little per record, so checkpoints complete while the job runs."""

    def map(self, value):
        import time

        time.sleep(0.002)
        return value


def test_offsets_are_committed_when_checkpoints_complete(kafka_cluster):
    source_topic = topic("commits")
    produce(kafka_cluster, source_topic, [(str(i), i % 4) for i in range(400)])

    def build(env):
        env.enable_checkpointing(100)
        source = lines_source(kafka_cluster, source_topic)
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").map(Slow()).add_sink(lambda v: None)
        env.execute()

    run = run_job(build, *REALTIME)
    commits = run.events(KafkaOffsetsCommitted)
    assert commits and all(c.error == "" and c.group_id == f"g-{source_topic}" for c in commits)
    ids = [c.checkpoint_id for c in commits]
    assert ids == sorted(ids)
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": kafka_cluster, "group.id": f"g-{source_topic}"})
    committed = consumer.committed([confluent_kafka.TopicPartition(source_topic, p) for p in range(4)], timeout=10)
    consumer.close()
    last = commits[-1]
    assert {f"{tp.topic}-{tp.partition}": tp.offset for tp in committed} == dict(zip(last.partitions, last.offsets))


# -- the sink's guarantees ----------------------------------------------------------------------


def guarantee_job(servers: str, source_topic: str, sink_topic: str, guarantee: DeliveryGuarantee):
    def build(env):
        env.set_parallelism(2)
        env.enable_checkpointing(150)
        source = lines_source(servers, source_topic)
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka") \
            .map(Slow(), output_type=Types.STRING()).name("Slow") \
            .sink_to(lines_sink(servers, sink_topic, guarantee))
        env.execute()

    return build


#: a restart strategy, and buffers of 32 records, so a source's batch (and a barrier's wait) is short
RESTARTS = ("restart-strategy.type=fixed-delay", "restart-strategy.fixed-delay.delay=100 ms",
            "rill.network.record-size=1024")


@pytest.mark.parametrize("workers", ["embedded", "processes"])
def test_exactly_once_through_an_exception_in_an_operator(kafka_cluster, workers):
    source_topic, sink_topic = topic("eo-in"), topic("eo-out")
    records = [str(i) for i in range(1600)]
    produce(kafka_cluster, source_topic, [(r, i % 4) for i, r in enumerate(records)])
    run = run_job(guarantee_job(kafka_cluster, source_topic, sink_topic, DeliveryGuarantee.EXACTLY_ONCE),
                  *REALTIME, *RESTARTS, f"plugins.workers={workers}", faults=["raise:operator=Slow,record=500"])
    assert run.error is None
    assert run.outcome.status == "FINISHED"
    assert any(e.origin == "restored" for e in run.events(KafkaSplitsAssigned))
    written = [value for _, _, value in read_topic(kafka_cluster, sink_topic)]
    assert sorted(written, key=int) == records  # each once, as a read_committed consumer sees them
    actions = Counter(e.action for e in run.events(KafkaTransactionChanged))
    assert actions["committed"] >= 2 and actions["pre_committed"] >= actions["committed"]


def test_at_least_once_repeats_records_only_after_a_restore(kafka_cluster):
    source_topic = topic("alo-in")
    records = [str(i) for i in range(1600)]
    produce(kafka_cluster, source_topic, [(r, i % 4) for i, r in enumerate(records)])
    clean = topic("alo-clean")
    run_job(guarantee_job(kafka_cluster, source_topic, clean, DeliveryGuarantee.AT_LEAST_ONCE), *REALTIME, *RESTARTS)
    assert sorted((v for _, _, v in read_topic(kafka_cluster, clean)), key=int) == records
    failing = topic("alo-fail")
    run = run_job(guarantee_job(kafka_cluster, source_topic, failing, DeliveryGuarantee.AT_LEAST_ONCE),
                  *REALTIME, *RESTARTS, faults=["raise:operator=Slow,record=500"])
    assert run.outcome.status == "FINISHED"
    written = Counter(v for _, _, v in read_topic(kafka_cluster, failing))
    assert set(written) == set(records)  # nothing lost
    assert any(n > 1 for n in written.values())  # the records since the restored checkpoint, again


def test_exactly_once_through_a_sigkilled_taskexecutor_process(kafka_cluster):
    source_topic, sink_topic = topic("kill-in"), topic("kill-out")
    records = [str(i) for i in range(4000)]
    produce(kafka_cluster, source_topic, [(r, i % 4) for i, r in enumerate(records)])
    run = run_job(guarantee_job(kafka_cluster, source_topic, sink_topic, DeliveryGuarantee.EXACTLY_ONCE),
                  *REALTIME, *RESTARTS, "plugins.workers=processes", "taskmanager.numberOfTaskSlots=1",
                  faults=["kill:target=taskexecutor-1,at=3s"])
    assert run.outcome.status == "FINISHED"
    assert any(e.origin == "restored" for e in run.events(KafkaSplitsAssigned))
    written = [value for _, _, value in read_topic(kafka_cluster, sink_topic)]
    assert sorted(written, key=int) == records


class LosesItsId:
    """A transactional producer whose producer id the broker stops mapping to its transactional
    id while its transaction runs (librdkafka's mock cluster draws producer ids at random, and a
    second producer can draw the same one): AddOffsetsToTxn fails with ``error``. ``zombie``
    (the group of the commit marker): the transaction and its marker are committed first, as by
    another attempt whose answer got lost (the mock cluster keeps no transactional offsets, so
    the marker is committed again outside the transaction, as the sink does)."""

    def __init__(self, producer, error: int, zombie: tuple[str, str] | None) -> None:
        self.producer, self.error, self.zombie = producer, error, zombie

    def __getattr__(self, name: str):
        return getattr(self.producer, name)

    def send_offsets_to_transaction(self, offsets, group, timeout):
        import confluent_kafka as ck

        if self.zombie is not None:
            self.producer.send_offsets_to_transaction(offsets, group, timeout)
            self.producer.commit_transaction(timeout)
            servers, marker_group = self.zombie
            marker = ck.Consumer({"bootstrap.servers": servers, "group.id": marker_group})
            marker.commit(offsets=offsets, asynchronous=False)
            marker.close()
        raise ck.KafkaException(ck.KafkaError(self.error, "Failed to add offsets to transaction: injected",
                                              txn_requires_abort=True))


def losing_ids(monkeypatch, prefix: str, error: int, times: int, zombie: str = "") -> list[str]:
    """The first ``times`` producers of the first transaction of subtask 0 of the sink whose
    transactional ids start with ``prefix`` lose their id; the list gets that transactional id.
    ``zombie``: the brokers' address, when another attempt commits the transaction first."""
    from kernel.runtime.streaming.kafka.writer import KafkaWriterOperator

    created = KafkaWriterOperator._producer
    failed: list[str] = []

    def producer(self, forced):
        real = created(self, forced)
        transactional_id = forced.get("transactional.id", "")
        if transactional_id.startswith(f"{prefix}-0-") and len(failed) < times and \
                (not failed or failed[0] == transactional_id):
            failed.append(transactional_id)
            return LosesItsId(real, error, (zombie, f"{prefix}-0") if zombie else None)
        return real

    monkeypatch.setattr(KafkaWriterOperator, "_producer", producer)
    return failed


def transaction_actions(run, transactional_id: str) -> list[str]:
    return [e.action for e in run.events(KafkaTransactionChanged) if e.transactional_id == transactional_id]


@pytest.mark.parametrize("zombie", [False, True], ids=["lost-id", "committed-meanwhile"])
def test_a_transaction_whose_producer_lost_its_id_is_redone_by_a_new_producer_unless_committed(
        kafka_cluster, monkeypatch, zombie):
    import confluent_kafka as ck

    source_topic, sink_topic = topic("lost-id-in"), topic("lost-id-out")
    records = [str(i) for i in range(400)]
    produce(kafka_cluster, source_topic, [(r, i % 4) for i, r in enumerate(records)])
    failed = losing_ids(monkeypatch, f"tx-{sink_topic}", ck.KafkaError.INVALID_PRODUCER_ID_MAPPING, 1,
                        kafka_cluster if zombie else "")
    run = run_job(guarantee_job(kafka_cluster, source_topic, sink_topic, DeliveryGuarantee.EXACTLY_ONCE),
                  *REALTIME, "restart-strategy.type=none", "rill.network.record-size=1024")
    assert run.outcome.status == "FINISHED", run.outcome.failure
    assert len(failed) == 1
    written = [value for _, _, value in read_topic(kafka_cluster, sink_topic)]
    assert sorted(written, key=int) == records  # each once: no restore, nothing lost, nothing twice
    if zombie:  # committed already: the abort finds no transaction, the marker shows it committed
        assert transaction_actions(run, failed[0]) == ["begun", "pre_committed", "fenced", "already_committed"]
    else:
        assert transaction_actions(run, failed[0]) == ["begun", "pre_committed", "aborted", "fenced", "committed"]


@pytest.mark.parametrize(("error", "times", "fenced"), [("INVALID_PRODUCER_ID_MAPPING", 11, 10),
                                                        ("TOPIC_AUTHORIZATION_FAILED", 1, 0)])
def test_a_transaction_fails_the_task_after_ten_redos_or_at_once_for_another_error(kafka_cluster, monkeypatch, error,
                                                                                  times, fenced):
    import confluent_kafka as ck

    source_topic, sink_topic = topic("lost-id-in"), topic("lost-id-out")
    produce(kafka_cluster, source_topic, [(str(i), i % 4) for i in range(400)])
    failed = losing_ids(monkeypatch, f"tx-{sink_topic}", getattr(ck.KafkaError, error), times)
    run = run_job(guarantee_job(kafka_cluster, source_topic, sink_topic, DeliveryGuarantee.EXACTLY_ONCE),
                  *REALTIME, "restart-strategy.type=none", "rill.network.record-size=1024")
    assert run.outcome.status == "FAILED" and len(failed) == times
    assert run.outcome.failure.splitlines()[0].endswith(
        f"KafkaConnectorError: Kafka sink at {kafka_cluster}: transaction {failed[0]} failed: Failed to add offsets "
        "to transaction: injected")
    assert transaction_actions(run, failed[0]).count("fenced") == fenced
    assert transaction_actions(run, failed[0]).count("committed") == 0


# -- what is refused ----------------------------------------------------------------------------


def test_a_kafka_job_is_refused_on_the_simulated_clock(kafka_cluster, shell, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(PYFLINK_WORD_COUNT.replace("from pyflink.", "from kernel."))
    code, out, err = shell("run", "--clock", "simulated", str(job), kafka_cluster, "a", "b")
    assert code == 2
    assert err.strip().splitlines() == [
        f"rill: error: 'Source: Kafka Source' (KafkaSource(a at {kafka_cluster})) needs rill.clock=realtime: a Kafka "
        "source reads a broker over the network as time passes on the wall clock; a simulated run's virtual time "
        "cannot wait for it"]


# -- watermarks per partition -------------------------------------------------------------------


BASE = 1_000_000_000  # ms, a multiple of the window size


def windowed_counts(servers: str, source_topic: str, strategy: WatermarkStrategy):
    from kernel.common.time import Time
    from kernel.datastream.window import TumblingEventTimeWindows

    def build(env):
        source = lines_source(servers, source_topic, bounded=False)
        env.from_source(source, strategy, "Kafka").map(lambda v: 1, output_type=Types.INT()) \
            .key_by(lambda v: 0).window(TumblingEventTimeWindows.of(Time.seconds(10))) \
            .reduce(lambda a, b: a + b).print()
        env.execute()

    return build


def test_the_watermark_is_the_minimum_over_the_partitions_and_an_idle_one_leaves_it(kafka_cluster):
    """Partition 0 has records at 0..29 s, partition 1 (slow) at 0..12 s, partition 2 at 0..25 s,
    partition 3 none (Kafka timestamps, from BASE: a producer's timestamp 0 means now). Windows of 10 s: [0, 10) has 30 records, [10, 20) 23,
    [20, 30) 16. Without idleness the empty partition holds the watermark back: no window fires;
    with it, the watermark is the slow partition's, 12 s - 1 ms: only [0, 10) fires."""
    from kernel.common.time import Duration

    source_topic = topic("watermarks")
    produce(kafka_cluster, source_topic, [(f"{p}-{s}", p, BASE + s * 1000) for p, last in ((0, 29), (1, 12), (2, 25))
                                          for s in range(last + 1)])
    held = run_job(windowed_counts(kafka_cluster, source_topic, WatermarkStrategy.for_monotonous_timestamps()),
                   *REALTIME, "rill.duration=3s")
    assert held.lines == []
    idle = run_job(windowed_counts(kafka_cluster, source_topic,
                                   WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(1000))),
                   *REALTIME, "rill.duration=4s")
    assert idle.lines == ["30"]


# -- partition discovery ------------------------------------------------------------------------


def test_partitions_of_a_topic_created_while_running_are_discovered(kafka_cluster, tmp_path):
    import subprocess
    import sys
    import time

    prefix = topic("disc")
    produce(kafka_cluster, f"{prefix}-a", [(f"a{i}", i % 4) for i in range(8)])
    job = tmp_path / "discover.py"
    job.write_text(textwrap.dedent(f"""
        from kernel.common import WatermarkStrategy
        from kernel.common.serialization import SimpleStringSchema
        from kernel.datastream import StreamExecutionEnvironment
        from kernel.datastream.connectors.kafka import KafkaSource

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        source = KafkaSource.builder().set_bootstrap_servers({kafka_cluster!r}) \\
            .set_topic_pattern({prefix!r} + "-.*").set_value_only_deserializer(SimpleStringSchema()) \\
            .set_property("partition.discovery.interval.ms", "300").build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").print()
        env.execute()
    """))
    from tests.conftest import rill_command

    process = subprocess.Popen([*rill_command(), "run", "--quiet", "--set", "rill.duration=5s", str(job)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    produce(kafka_cluster, f"{prefix}-b", [(f"b{i}", i % 4) for i in range(8)])
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    printed = sorted(line.split("> ", 1)[1] for line in out.splitlines())
    assert printed == sorted([f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)])
    code = subprocess.run([*rill_command(), "sql", "--format", "json",
                           "SELECT subtask, partitions, initial FROM rill.ev_kafka_partitions_discovered ORDER BY seq"],
                          capture_output=True, text=True)
    assert code.returncode == 0, code.stderr
    import json

    rows = json.loads(code.stdout)
    later = [row for row in rows if not row["initial"]]
    assert {row["subtask"] for row in later} == {0, 1}
    assert all(sorted(json.loads(row["partitions"]) if isinstance(row["partitions"], str) else row["partitions"])
               == [f"{prefix}-b-{p}" for p in range(4)] for row in later)


# -- savepoints and rescaling -------------------------------------------------------------------


def test_a_savepoint_restored_with_another_parallelism_keeps_every_partitions_offset(kafka_cluster, shell, tmp_path):
    source_topic = topic("rescale")
    produce(kafka_cluster, source_topic, [(f"{p}-{i}", p) for p in range(4) for i in range(20)])
    job = tmp_path / "rescale.py"
    job.write_text(textwrap.dedent(f"""
        import sys
        from kernel.common import WatermarkStrategy
        from kernel.common.serialization import SimpleStringSchema
        from kernel.datastream import StreamExecutionEnvironment
        from kernel.datastream.connectors.kafka import KafkaSource

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(int(sys.argv[1]))
        source = KafkaSource.builder().set_bootstrap_servers({kafka_cluster!r}).set_topics({source_topic!r}) \\
            .set_value_only_deserializer(SimpleStringSchema()).build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").uid("kafka").print()
        env.execute()
    """))
    savepoints = tmp_path / "savepoints"
    code, first, err = shell("run", "--quiet", "--set", "rill.duration=2s", "--set",
                             f"rill.stop-with-savepoint={savepoints}", str(job), "2")
    assert code == 0, err
    produce(kafka_cluster, source_topic, [(f"{p}-{i}", p) for p in range(4) for i in range(20, 30)])
    savepoint = next(path for path in savepoints.iterdir() if path.is_dir())
    code, second, err = shell("run", "--quiet", "--set", "rill.duration=2s", "-s", str(savepoint), str(job), "3")
    assert code == 0, err
    values = lambda text: [line.split("> ", 1)[1] for line in text.splitlines()]  # noqa: E731
    assert sorted(values(first)) == sorted(f"{p}-{i}" for p in range(4) for i in range(20))
    assert sorted(values(second)) == sorted(f"{p}-{i}" for p in range(4) for i in range(20, 30))


# -- errors -------------------------------------------------------------------------------------

ERROR_JOB = """
import sys
from kernel.common import Types, WatermarkStrategy
from kernel.common.serialization import SimpleStringSchema
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.kafka import KafkaOffsetsInitializer, KafkaSource
from kernel.datastream.formats.json import JsonRowDeserializationSchema

servers, source_topic, schema = sys.argv[1:4]
deserializer = SimpleStringSchema() if schema == "string" else JsonRowDeserializationSchema.builder() \\
    .type_info(Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])).build()
env = StreamExecutionEnvironment.get_execution_environment()
source = KafkaSource.builder().set_bootstrap_servers(servers).set_topics(source_topic) \\
    .set_value_only_deserializer(deserializer).set_bounded(KafkaOffsetsInitializer.latest()).build()
env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").print()
env.execute()
"""


def run_error_job(shell, tmp_path, servers: str, source_topic: str, schema: str = "string"):
    job = tmp_path / "errors.py"
    job.write_text(ERROR_JOB)
    return shell("run", "--quiet", str(job), servers, source_topic, schema, timeout=120)


def failure_line(err: str) -> str:
    lines = [line for line in err.splitlines() if "KafkaConnectorError" in line]
    assert lines, err
    return lines[0].split("KafkaConnectorError: ", 1)[1]


def test_an_unreachable_broker_fails_the_job_in_one_line_naming_it(shell, tmp_path):
    code, out, err = run_error_job(shell, tmp_path, "127.0.0.1:1", "anything")
    assert code == 1
    assert failure_line(err).startswith("Kafka source at 127.0.0.1:1: cannot read the cluster's metadata: ")
    assert failure_line(err).endswith("(is a broker listening at 127.0.0.1:1?)")


def test_a_missing_topic_fails_the_job_in_one_line_naming_it(kafka_cluster, shell, tmp_path):
    code, out, err = run_error_job(shell, tmp_path, kafka_cluster, "no-such-topic")
    assert code == 1
    assert failure_line(err) == f"Kafka source at {kafka_cluster}: topic 'no-such-topic' does not exist"


def test_a_record_that_does_not_deserialize_fails_the_job_naming_its_partition_and_offset(kafka_cluster, shell,
                                                                                        tmp_path):
    source_topic = topic("bad-json")
    produce(kafka_cluster, source_topic, [('{"word": "a", "n": 1}', 2), ('{"word": "b", "n": 2}', 2), ("not json", 2)])
    code, out, err = run_error_job(shell, tmp_path, kafka_cluster, source_topic, "json")
    assert code == 1
    assert failure_line(err).startswith(
        f"Kafka source at {kafka_cluster}: cannot deserialize the record at offset 2 of partition {source_topic}-2: "
        "ValueError: failed to deserialize JSON b'not json': ")


# -- re-execution -------------------------------------------------------------------------------

RERUN_JOB = """
import sys
from kernel.common import Types, WatermarkStrategy
from kernel.common.serialization import SimpleStringSchema
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.kafka import (DeliveryGuarantee, KafkaOffsetsInitializer,
                                                KafkaRecordSerializationSchema, KafkaSink, KafkaSource)

servers, source_topic, sink_topic = sys.argv[1:4]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
source = KafkaSource.builder().set_bootstrap_servers(servers).set_topics(source_topic).set_group_id("rerun") \\
    .set_value_only_deserializer(SimpleStringSchema()).set_bounded(KafkaOffsetsInitializer.latest()).build()
upper = env.from_source(source, WatermarkStrategy.no_watermarks(), "Kafka").map(str.upper, output_type=Types.STRING())
upper.print()
upper.sink_to(KafkaSink.builder().set_bootstrap_servers(servers).set_record_serializer(
    KafkaRecordSerializationSchema.builder().set_topic(sink_topic).set_value_serialization_schema(SimpleStringSchema())
    .build()).set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE).build())
env.execute()
"""


def recorded_run(shell, tmp_path, servers: str, source_topic: str, sink_topic: str) -> tuple[str, str]:
    job = tmp_path / "rerun_job.py"
    job.write_text(RERUN_JOB)
    code, out, err = shell("run", "--quiet", str(job), servers, source_topic, sink_topic)
    assert code == 0, err
    code, runs, err = shell("sql", "--format", "json", "SELECT run_id FROM rill.runs")
    import json

    return json.loads(runs)[-1]["run_id"], out


def test_rerun_reads_exactly_the_recorded_offset_ranges_again(kafka_cluster, shell, tmp_path):
    source_topic, sink_topic = topic("rerun-in"), topic("rerun-out")
    produce(kafka_cluster, source_topic, [(f"r{i}", i % 4) for i in range(40)])
    run_id, printed = recorded_run(shell, tmp_path, kafka_cluster, source_topic, sink_topic)
    assert sorted(line.split("> ", 1)[1] for line in printed.splitlines()) == sorted(f"R{i}" for i in range(40))
    code, metrics, err = shell("metrics", run_id)
    assert code == 0, err
    per_partition = {}
    for line in metrics.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[-3].startswith(f"KafkaSourceReader.topic.{source_topic}.partition."):
            per_partition[fields[-3].split(".partition.", 1)[1]] = int(fields[-1])
    assert per_partition == {**{f"{p}.currentOffset": 9 for p in range(4)}, **{f"{p}.recordsConsumed": 10 for p in range(4)},
                             **{f"{p}.committedOffset": -1 for p in range(4)}, **{f"{p}.records-lag": 0 for p in range(4)}}
    produce(kafka_cluster, source_topic, [(f"later{i}", i % 4) for i in range(12)])  # not read by the run
    code, out, err = shell("replay", run_id, "--rerun")
    assert code == 0, err
    assert out.splitlines()[0] == (f"note: run {run_id} read Kafka: the re-execution reads the offset ranges it read, "
                                   "on the wall clock (timing is not reproduced); its Kafka sinks write nothing")
    assert out.splitlines()[-1] == "output: 40 lines recorded, 40 re-executed; identical"
    assert len(read_topic(kafka_cluster, sink_topic, committed=False)) == 40  # the re-execution wrote nothing


def test_rerun_says_clearly_when_the_recorded_data_is_gone(kafka_cluster, shell, tmp_path):
    source_topic = topic("rerun-gone")
    produce(kafka_cluster, source_topic, [(f"r{i}", i % 4) for i in range(8)])
    run_id, _ = recorded_run(shell, tmp_path, kafka_cluster, source_topic, topic("rerun-gone-out"))
    # the mock keeps at most 5 MiB of a partition: 8 records of 900 kB push the first ones out
    produce(kafka_cluster, source_topic, [(b"x" * 900_000, 0) for _ in range(8)])
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": kafka_cluster, "group.id": "low"})
    low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(source_topic, 0), timeout=10)
    consumer.close()
    assert low > 0
    code, out, err = shell("replay", run_id, "--rerun")
    assert code == 2
    assert err.strip().splitlines() == [
        f"rill: error: run {run_id} read offsets 0..1 of {source_topic}-0 at {kafka_cluster}, but the partition now "
        f"holds {low}..{high - 1}: the data is gone (retention or a recreated topic), so the run cannot be re-executed"]


def test_without_confluent_kafka_a_kafka_job_says_what_to_install(kafka_cluster, shell, tmp_path):
    hidden = tmp_path / "hidden"
    (hidden / "confluent_kafka").mkdir(parents=True)
    (hidden / "confluent_kafka" / "__init__.py").write_text("raise ImportError('No module named confluent_kafka')\n")
    job = tmp_path / "job.py"
    job.write_text(PYFLINK_WORD_COUNT.replace("from pyflink.", "from kernel."))
    code, out, err = shell("run", str(job), kafka_cluster, "a", "b", env={"PYTHONPATH": str(hidden)})
    assert code == 2
    assert err.strip().splitlines() == [
        f"rill: error: 'Source: Kafka Source' (KafkaSource(a at {kafka_cluster})) needs confluent-kafka "
        "(pip install 'rill[kafka]')"]


def test_defining_a_kafka_job_imports_no_kafka_client():
    import subprocess
    import sys

    code = ("import sys\n"
            "from kernel.datastream.connectors.kafka import KafkaSource, KafkaSink\n"
            "from kernel.datastream.formats.json import JsonRowSerializationSchema\n"
            "assert 'confluent_kafka' not in sys.modules, 'confluent_kafka imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_spark_backend_refuses_a_kafka_sink_in_one_line(kafka_cluster, shell, tmp_path):
    job = tmp_path / "job.py"
    job.write_text(PYFLINK_WORD_COUNT.replace("from pyflink.", "from kernel."))
    code, out, err = shell("run", "--set", "plugins.backend=spark", str(job), kafka_cluster, "a", "b")
    assert code == 2
    assert err.strip().splitlines() == [
        f"rill: error: sink 'Sink: Writer' (KafkaSink(b at {kafka_cluster}, EXACTLY_ONCE)): the spark backend writes "
        "FileSinks only; run Kafka jobs on the local backend (plugins.workers=spark puts its TaskExecutors on a Spark "
        "cluster)"]


def test_an_exactly_once_sink_refuses_a_transaction_timeout_below_the_checkpoint_interval(kafka_cluster):
    def build(env):
        env.enable_checkpointing(5000)
        sink = KafkaSink.builder().set_bootstrap_servers(kafka_cluster).set_record_serializer(
            KafkaRecordSerializationSchema.builder().set_topic("t").set_value_serialization_schema(SimpleStringSchema())
            .build()).set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).set_transactional_id_prefix("p") \
            .set_property("transaction.timeout.ms", "4000").build()
        env.from_collection(["a"]).sink_to(sink)
        env.execute()

    run = run_job(build, *REALTIME, "restart-strategy.type=none")
    assert run.outcome.status == "FAILED"
    assert run.outcome.failure.splitlines()[0].endswith(
        f"KafkaConnectorError: Kafka sink at {kafka_cluster}: transaction.timeout.ms (4000) must be larger than the "
        "checkpoint interval (5000 ms), or Kafka aborts transactions before they are committed")


def test_a_kafka_source_takes_part_in_watermark_alignment(kafka_cluster):
    """A Kafka source whose records (all there at once) span 20 s of event time, aligned with a
    data generator running 2 s of event time a second: the Kafka source's partitions are paused
    and resumed (split-level alignment) so that it keeps within the drift."""
    from kernel.runtime.cluster_events import WatermarkAdvanced
    from kernel.common.time import Duration
    from kernel.datastream.connectors.datagen import DataGeneratorSource

    source_topic = topic("aligned")
    produce(kafka_cluster, source_topic, [(str(i), i % 4, BASE + i) for i in range(20_000)])

    def aligned(strategy):
        return strategy.with_watermark_alignment("pair", Duration.of_millis(1000), Duration.of_millis(100))

    def build(env):
        kafka = lines_source(kafka_cluster, source_topic)
        env.from_source(kafka, aligned(WatermarkStrategy.for_monotonous_timestamps()), "Kafka") \
            .add_sink(lambda v: None)
        slow = DataGeneratorSource(lambda i: BASE + i * 2, count=3000, records_per_second=1000)
        env.from_source(slow, aligned(WatermarkStrategy.for_monotonous_timestamps()
                                      .with_timestamp_assigner(lambda value, ts: value)), "Slow") \
            .add_sink(lambda v: None)
        env.execute()

    run = run_job(build, *REALTIME, "plugins.watermarking=aligned")
    assert run.outcome.status == "FINISHED"
    latest: dict[str, int] = {}
    worst = 0
    for event in run.events(WatermarkAdvanced):
        if event.direction != "output" or not event.vertex_name.startswith("Source"):
            continue
        if event.watermark == (1 << 63) - 1:
            break
        latest[event.vertex_name.split(" -> ")[0]] = event.watermark
        if len(latest) == 2:
            worst = max(worst, latest["Source: Kafka"] - latest["Source: Slow"])
    # within the drift, give or take what is read between two announcements of the group's
    # watermark (every 100 ms; later on a loaded machine) — without alignment it is ~14 s ahead
    assert 0 < worst <= 3000
