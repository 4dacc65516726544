"""librdkafka's mock Kafka cluster in a process of its own (the ``test.mock.num.brokers``
client property): real brokers speaking Kafka's protocol over TCP on 127.0.0.1, serving any
process — consumer groups, offset commits, idempotent and transactional producers,
``read_committed``; topics are created on first use with 4 partitions.

``python tests/kafka_mock.py`` prints the bootstrap address and serves until its stdin closes
or it gets SIGTERM. :class:`MockCluster` starts one and stops it; :func:`produce` and
:func:`read_topic` are what tests and benchmarks write and read with.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

#: consumer settings for tests: librdkafka's 1 s fetch queue backoff would cap a reader
FAST_FETCH = {"fetch.queue.backoff.ms": 10, "fetch.wait.max.ms": 5}


class MockCluster:
    """A mock cluster process: ``bootstrap`` once started; ``stop()`` ends it."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline().strip()
        if not line:
            self.process.kill()
            raise RuntimeError("the mock Kafka cluster did not start")
        self.bootstrap = line

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def produce(bootstrap: str, topic: str, records: list[tuple[Any, ...]], **config: Any) -> None:
    """Write ``(value,)``, ``(value, partition)`` or ``(value, partition, timestamp ms)``
    records (str or bytes values) to ``topic``, acknowledged."""
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for record in records:
        value, partition, timestamp = (*record, None, None)[:3]
        kwargs: dict[str, Any] = {}
        if partition is not None:
            kwargs["partition"] = partition
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        while True:
            try:
                producer.produce(topic, value.encode() if isinstance(value, str) else value, **kwargs)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(30) == 0


def end_offsets(bootstrap: str, topic: str, partitions: int = 4) -> list[int]:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "rill-tests-offsets"})
    try:
        return [consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)]
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str, committed: bool = True, partitions: int = 4,
               timeout: float = 30.0) -> list[tuple[int, int, str]]:
    """Every record of ``topic`` up to its current end, as (partition, offset, value) in
    partition and offset order (``committed``: as a ``read_committed`` consumer sees them)."""
    import confluent_kafka

    ends = end_offsets(bootstrap, topic, partitions)
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "rill-tests-reader", "enable.auto.commit": False,
        "isolation.level": "read_committed" if committed else "read_uncommitted", **FAST_FETCH})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
    records: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            positions = consumer.position([confluent_kafka.TopicPartition(topic, p) for p in range(partitions)])
            if all(tp.offset >= end for tp, end in zip(positions, ends)):
                break
            for message in consumer.consume(1000, 0.05):
                if message.error() is None:
                    records.append((message.partition(), message.offset(), message.value().decode()))
    finally:
        consumer.close()
    return sorted(records)


def _serve() -> None:
    import confluent_kafka

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    client = confluent_kafka.Producer({"test.mock.num.brokers": 1, "log_level": 0})
    metadata = client.list_topics(timeout=10)
    print(",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values()), flush=True)
    for _ in sys.stdin:
        pass
    os._exit(0)


if __name__ == "__main__":
    _serve()
