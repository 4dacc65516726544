"""Kafka end to end: 1 M records through source → keyed 5 s tumbling event-time window (a count
per key) → ``EXACTLY_ONCE`` KafkaSink, against librdkafka's mock cluster, beside a plain
confluent-kafka loop doing the same work with transactions.

    python scripts/bench_kafka.py [--records 1000000] [--keys 100] [--checkpoint-ms 1000]

The input (written once, lz4-compressed in large batches: the mock keeps at most 5 MiB or
100 000 batches per partition, and the end offsets are checked) is ``--records`` records over
4 partitions, value ``k<i % keys>``, Kafka timestamp 1 ms apart per partition. Measured, each
on its own output topic, all in this one run:

* ``loop``: one consumer reading the 4 partitions, counts per (key, window) in a dict, a window
  fired when the minimum over the partitions' largest timestamps passes its end; every
  ``--checkpoint-ms`` one transaction with the fired results, the changed window counts written
  to a changelog topic (what a recoverable exactly-once job must keep at least) and the
  consumer's offsets (``send_offsets_to_transaction``).
* ``rill p=1 embedded`` and ``rill p=2 processes``: ``rill run`` of the same pipeline (checkpoints
  every ``--checkpoint-ms``), wall time of the command (start-up included) and of the run.

Each output is checked against the expected counts (read ``read_committed``). Prints the times
and rill's ratio to the loop.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]

WINDOW_MS = 5000
BASE_MS = 1_000_000_000_000  # a multiple of the window

JOB = '''
import sys
from kernel.common import SimpleStringSchema, Time, Types, WatermarkStrategy
from kernel.datastream import StreamExecutionEnvironment
from kernel.datastream.connectors.base import DeliveryGuarantee
from kernel.datastream.connectors.kafka import (KafkaOffsetsInitializer, KafkaRecordSerializationSchema, KafkaSink,
                                                KafkaSource)
from kernel.datastream.window import TumblingEventTimeWindows

servers, source_topic, sink_topic, parallelism, interval = sys.argv[1:6]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(int(parallelism))
env.enable_checkpointing(int(interval))
source = KafkaSource.builder().set_bootstrap_servers(servers).set_topics(source_topic).set_group_id(sink_topic) \\
    .set_bounded(KafkaOffsetsInitializer.latest()).set_value_only_deserializer(SimpleStringSchema()) \\
    .set_property("fetch.wait.max.ms", "5").build()
sink = KafkaSink.builder().set_bootstrap_servers(servers).set_record_serializer(
    KafkaRecordSerializationSchema.builder().set_topic(sink_topic).set_value_serialization_schema(SimpleStringSchema())
    .build()).set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE).set_transactional_id_prefix(sink_topic) \\
    .set_property("transaction.timeout.ms", "600000").build()
env.from_source(source, WatermarkStrategy.for_monotonous_timestamps(), "Kafka") \\
    .map(lambda key: (key, 1), output_type=Types.TUPLE([Types.STRING(), Types.LONG()])) \\
    .key_by(lambda pair: pair[0]).window(TumblingEventTimeWindows.of(Time.milliseconds(5000))) \\
    .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=None) \\
    .map(lambda pair: f"{pair[0]},{pair[1]}", output_type=Types.STRING()).sink_to(sink)
env.execute("bench kafka")
'''


def write_input(servers: str, topic: str, records: int, keys: int) -> None:
    from kafka_mock import end_offsets, produce

    rows = [(f"k{i % keys}", i % 4, BASE_MS + i // 4) for i in range(records)]
    produce(servers, topic, rows, **{"compression.type": "lz4", "linger.ms": 200, "batch.size": 4_000_000,
                                     "batch.num.messages": 1_000_000, "queue.buffering.max.messages": 2_000_000})
    ends = end_offsets(servers, topic)
    if sum(ends) != records:
        raise SystemExit(f"the mock cluster holds {sum(ends)} of the {records} input records (its limits?)")


def expected(records: int, keys: int) -> Counter:
    counts: Counter = Counter()
    for i in range(records):
        counts[(f"k{i % keys}", (i // 4) // WINDOW_MS)] += 1
    return Counter(f"{key},{n}" for (key, _), n in counts.items())


def plain_loop(servers: str, source_topic: str, sink_topic: str, interval_ms: int) -> float:
    """The hand-written exactly-once loop; its wall time."""
    import confluent_kafka as ck

    started = time.perf_counter()
    group = f"loop-{sink_topic}"
    consumer = ck.Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False,
                            "fetch.queue.backoff.ms": 10, "fetch.wait.max.ms": 5, "log_level": 0})
    producer = ck.Producer({"bootstrap.servers": servers, "transactional.id": f"loop-{sink_topic}", "linger.ms": 5,
                            "log_level": 0})
    producer.init_transactions(30)
    ends = {p: consumer.get_watermark_offsets(ck.TopicPartition(source_topic, p), timeout=10)[1] for p in range(4)}
    consumer.assign([ck.TopicPartition(source_topic, p, 0) for p in range(4)])
    positions = {p: 0 for p in range(4)}
    latest = {p: -1 for p in range(4)}
    windows: dict[tuple[str, int], int] = {}
    changed: set[tuple[str, int]] = set()
    producer.begin_transaction()
    next_commit = time.perf_counter() + interval_ms / 1000

    def fire(up_to: int) -> None:
        for state in [w for w in windows if (w[1] + 1) * WINDOW_MS <= up_to]:
            producer.produce(sink_topic, f"{state[0]},{windows.pop(state)}".encode())
            changed.add(state)

    def commit() -> None:
        for key, window in changed:
            count = windows.get((key, window))
            producer.produce(f"{sink_topic}-changelog", None if count is None else str(count).encode(),
                             f"{key}/{window}".encode())
        changed.clear()
        producer.send_offsets_to_transaction(
            [ck.TopicPartition(source_topic, p, o) for p, o in positions.items()], consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(60)
        producer.begin_transaction()

    while any(positions[p] < ends[p] for p in range(4)):
        for message in consumer.consume(10_000, 0.05):
            p = message.partition()
            ts = message.timestamp()[1]
            state = (message.value().decode(), (ts - BASE_MS) // WINDOW_MS)
            windows[state] = windows.get(state, 0) + 1
            changed.add(state)
            positions[p] = message.offset() + 1
            if ts > latest[p]:
                latest[p] = ts
        fire(min(latest.values()) - BASE_MS + 1)
        if time.perf_counter() >= next_commit:
            commit()
            next_commit = time.perf_counter() + interval_ms / 1000
    fire(1 << 62)
    commit()
    producer.abort_transaction(30)
    consumer.close()
    return time.perf_counter() - started


def rill_run(servers: str, source_topic: str, sink_topic: str, parallelism: int, workers: str,
             interval_ms: int, workdir: str) -> tuple[float, float]:
    """(wall time of ``rill run``, wall time of the run as it reports)."""
    beside = os.path.join(os.path.dirname(sys.executable), "rill")
    job = os.path.join(workdir, "bench_kafka_job.py")
    with open(job, "w") as handle:
        handle.write(JOB)
    started = time.perf_counter()
    done = subprocess.run([beside if os.path.isfile(beside) else "rill", "run", "--set", f"plugins.workers={workers}",
                           "--set", "taskmanager.numberOfTaskSlots=1", job, servers, source_topic, sink_topic,
                           str(parallelism), str(interval_ms)], capture_output=True, text=True, cwd=workdir,
                          env={**os.environ, "RILL_HOME": os.path.join(workdir, ".rill")})
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rill run failed: {done.stderr.strip()}")
    found = re.search(r"wall ([0-9.]+) s", done.stderr)
    return took, float(found.group(1)) if found else float("nan")


def check(servers: str, topic: str, want: Counter, what: str) -> None:
    from kafka_mock import read_topic

    got = Counter(value for _, _, value in read_topic(servers, topic, timeout=120))
    if got != want:
        raise SystemExit(f"{what}: wrong output ({sum((want - got).values())} missing, "
                         f"{sum((got - want).values())} unexpected)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--checkpoint-ms", type=int, default=1000)
    args = parser.parse_args()
    from kafka_mock import MockCluster

    workdir = tempfile.mkdtemp(prefix="rill-bench-kafka-")
    with MockCluster() as cluster:
        servers = cluster.bootstrap
        source_topic = "bench-input"
        t = time.perf_counter()
        write_input(servers, source_topic, args.records, args.keys)
        print(f"input: {args.records} records, {args.keys} keys, 4 partitions ({time.perf_counter() - t:.1f} s to write)")
        want = expected(args.records, args.keys)
        loop = plain_loop(servers, source_topic, "bench-loop", args.checkpoint_ms)
        check(servers, "bench-loop", want, "loop")
        print(f"plain confluent-kafka transactional loop (changelog, offsets in the transaction): {loop:.2f} s")
        for parallelism, workers in ((1, "embedded"), (2, "processes")):
            topic = f"bench-rill-{parallelism}"
            command, run = rill_run(servers, source_topic, topic, parallelism, workers, args.checkpoint_ms, workdir)
            check(servers, topic, want, f"rill p={parallelism} {workers}")
            print(f"rill p={parallelism} {workers}: rill run {command:.2f} s (the run {run:.2f} s): "
                  f"{command / loop:.2f}x the loop ({run / loop:.2f}x by the run)")


if __name__ == "__main__":
    main()
