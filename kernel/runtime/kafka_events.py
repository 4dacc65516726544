"""The events of Kafka sources and sinks (:mod:`kernel.runtime.streaming.kafka`): which partitions a
source subtask reads and from where, what it read (the offset ranges a re-execution reads again:
``rill replay RUN --rerun``), the offsets it committed, and the sink's transactions. They live in
the kernel because the kernel's operators emit them and replay reads them."""

from __future__ import annotations

from kernel.runtime.cluster_events import TaskEvent
from kernel.events import Event


class KafkaPartitionsDiscovered(TaskEvent, tag="kafka_partitions_discovered"):
    """A source subtask's discovery found ``partitions`` (``topic-partition``) it had not known;
    ``total`` partitions are known now. ``initial``: at the start (else a periodic discovery)."""

    partitions: list[str] = []
    total: int = 0
    initial: bool = True


class KafkaSplitsAssigned(TaskEvent, tag="kafka_splits_assigned"):
    """A source subtask reads these partitions from ``start_offsets`` (the next offset to read)
    up to ``stop_offsets`` (exclusive; -1: no end). ``origin``: ``initial`` (Flink's owner rule
    over the partitions found at the start), ``discovered`` (found later, read from the
    earliest offset) or ``restored`` (from a checkpoint or savepoint)."""

    partitions: list[str] = []
    start_offsets: list[int] = []
    stop_offsets: list[int] = []
    origin: str = "initial"


class KafkaOffsetsConsumed(TaskEvent, tag="kafka_offsets_consumed"):
    """The offsets a source subtask's attempt has read so far, per partition: from
    ``first_offsets`` up to ``next_offsets`` (exclusive) — at every checkpoint and when the
    attempt ends."""

    bootstrap_servers: str = ""
    partitions: list[str] = []
    first_offsets: list[int] = []
    next_offsets: list[int] = []


class KafkaOffsetsCommitted(TaskEvent, tag="kafka_offsets_committed"):
    """A source subtask committed checkpoint ``checkpoint_id``'s offsets to its consumer group
    (``commit.offsets.on.checkpoint``); ``error`` when the commit failed (counted only, as Flink's)."""

    checkpoint_id: int = 0
    group_id: str = ""
    partitions: list[str] = []
    offsets: list[int] = []
    error: str = ""


class KafkaTransactionChanged(TaskEvent, tag="kafka_transaction_changed"):
    """A sink subtask's transaction ``transactional_id`` for checkpoint ``checkpoint_id``:
    ``begun`` (records go to it), ``pre_committed`` (sealed at the checkpoint's barrier, in the
    checkpoint), ``committed`` (the checkpoint completed), ``aborted``, ``fenced`` (its producer
    lost its id: a new producer redoes it) or ``already_committed`` (a restored or fenced one
    found committed)."""

    transactional_id: str = ""
    checkpoint_id: int = 0
    action: str = ""
    records: int = 0


KAFKA_EVENT_TYPES: tuple[type[Event], ...] = (
    KafkaPartitionsDiscovered, KafkaSplitsAssigned, KafkaOffsetsConsumed, KafkaOffsetsCommitted, KafkaTransactionChanged,
)
