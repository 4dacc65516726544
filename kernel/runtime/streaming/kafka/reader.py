"""Flink's ``KafkaSourceReader`` with its split enumeration done by each subtask.

Every partition is a split: ``(topic, partition, next offset, stop offset)``. Flink's enumerator
lists the partitions and pushes each to its owner subtask,
``(((topic.hashCode() * 31) & 0x7FFFFFFF) % readers + partition) % readers``; here each subtask
lists them itself and keeps those it owns — the same assignment, with no coordinator round trip.
The partitions found at the start get the starting offsets (``latest``/``timestamp`` resolved
to concrete offsets then), partitions found later (every ``partition.discovery.interval.ms``,
Flink's 300 000 default; never when bounded) start at the earliest offset. A checkpoint holds
each split at the offset to read next (``SourceReaderState``, split-distributed: after a
rescale the splits go round robin) and the partitions discovery knows (a union state), so a
restored reader resumes from the checkpointed offsets — the group's committed offsets play no
role — and discovers only partitions nobody knew. When a checkpoint completes, its offsets are
committed to the group (``commit.offsets.on.checkpoint``; a failed commit is only counted).

Records are read with librdkafka's consumer in batches (``consume(n, 0)``, never blocking the
task: with nothing fetched the task waits ``IDLE_WAIT_MS`` between its mails). A split ends at
its stop offset (exclusive: control records of transactions count, the consumer's position
tells); a bounded reader finishes when all have. Each batch carries the records' Kafka
timestamps and their runs per partition, for the source's per-split watermarks.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kernel.datastream.connectors.kafka import KafkaOffsetResetStrategy, KafkaSource
from kernel.runtime.kafka_events import KafkaOffsetsCommitted, KafkaOffsetsConsumed, KafkaPartitionsDiscovered, KafkaSplitsAssigned
from kernel.runtime.streaming.kafka.assignment import split_owner
from kernel.runtime.streaming.kafka.client import (
    REQUEST_TIMEOUT_S,
    KafkaConnectorError,
    client_config,
    confluent,
    create,
    describe,
    describe_error,
)
from kernel.runtime.streaming.kafka.reader_metrics import KafkaSourceReaderMetrics
from kernel.runtime.streaming.readers import SourceReader
from kernel.runtime.streaming.runtime import OperatorRuntime

#: no end offset
NO_STOP = -1


def recorded_ranges_key(servers: str) -> str:
    """The input override under which a re-execution gives the readers of the cluster at
    ``servers`` the recorded offset ranges (JSON: ``{"topic-partition": [first, next]}``)."""
    return f"kafka:{servers}"
#: how long a reader that found nothing waits before it looks again (ms)
IDLE_WAIT_MS = 10


class Split:
    """A partition being read: the next offset, the stop offset (exclusive, NO_STOP), and the
    first offset this attempt read from."""

    __slots__ = ("topic", "partition", "next", "stop", "first", "name", "released")

    def __init__(self, topic: str, partition: int, next_offset: int, stop: int) -> None:
        self.topic = topic
        self.partition = partition
        self.next = next_offset
        self.stop = stop
        self.first = next_offset
        self.name = f"{topic}-{partition}"
        self.released = False

    def done(self) -> bool:
        return self.stop != NO_STOP and self.next >= self.stop


class KafkaSourceReader(SourceReader):
    def __init__(self, source: KafkaSource) -> None:
        self.source = source
        self.splits: dict[tuple[str, int], Split] = {}
        self.known: set[tuple[str, int]] = set()
        self.assigned: set[str] = set()  # the partitions the consumer fetches
        self.restored = False
        self.started = False
        self.rerun = False  # a re-execution reading the recorded run's offset ranges
        self.consumer: Any = None
        #: the Kafka timestamps of the last batch, and its runs of records per split
        self.timestamps: list[int] | None = None
        self.runs: list[tuple[Any, int]] = []
        #: splits added and finished since the operator last looked (for per-split watermarks)
        self.added: list[Any] = []
        self.released: list[Any] = []
        self._idle = False
        self._pending_commits: dict[int, dict[tuple[str, int], int]] = {}
        self._commits_in_flight: list[tuple[int, list[str], list[int]]] = []
        self._errors: list[str] = []
        self.metrics: Any = None

    # -- lifecycle ----------------------------------------------------------------------------

    def open(self, runtime: OperatorRuntime) -> None:
        self.runtime = runtime
        info = runtime.info
        self.subtask, self.parallelism = info.subtask, info.parallelism
        source = self.source
        self.ck = confluent()
        self.where = f"Kafka source at {source.bootstrap_servers}"
        reset = {KafkaOffsetResetStrategy.EARLIEST: "earliest", KafkaOffsetResetStrategy.LATEST: "latest",
                 KafkaOffsetResetStrategy.NONE: "error"}[source.starting_offsets.reset]
        config = client_config(source.bootstrap_servers, source.properties, {
            "isolation.level": "read_uncommitted", "fetch.queue.backoff.ms": 10,
            "socket.connection.setup.timeout.ms": int(REQUEST_TIMEOUT_S * 1000),
        }, {
            "group.id": source.group_id or source.client_id_prefix, "client.id": f"{source.client_id_prefix}-{self.subtask}",
            "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": reset,
            "enable.partition.eof": False, "error_cb": self._on_error,
        })
        if source.commit_offsets_on_checkpoint():
            config["on_commit"] = self._on_commit
        self.consumer = create("Consumer", config, self.where)
        self.interval = source.discovery_interval_ms()
        self.next_discovery = runtime.now_ms() + self.interval if self.interval > 0 else None

    def register_metrics(self, group: Any) -> None:
        """Flink's reader metrics in the source operator's metric group."""
        self.metrics = KafkaSourceReaderMetrics(group, self)
        for split in self.splits.values():
            self.metrics.add_split(split)

    def _on_error(self, error: Any) -> None:
        """librdkafka's errors; those the reader cannot get over fail it at its next poll."""
        if error.fatal() or error.code() in (self.ck.KafkaError._ALL_BROKERS_DOWN, self.ck.KafkaError._AUTHENTICATION,
                                             self.ck.KafkaError.SASL_AUTHENTICATION_FAILED):
            self._errors.append(error.str())

    def close(self) -> None:
        if self.consumer is not None:
            if self.started:
                self._record_read()
            consumer, self.consumer = self.consumer, None
            consumer.close()

    # -- discovery and assignment ------------------------------------------------------------

    def _list_partitions(self) -> list[tuple[str, int]]:
        """The partitions the source subscribes to, as the brokers know them now."""
        source = self.source
        try:
            if source.topics and len(source.topics) == 1:
                metadata = self.consumer.list_topics(source.topics[0], timeout=REQUEST_TIMEOUT_S)
            else:
                metadata = self.consumer.list_topics(timeout=REQUEST_TIMEOUT_S)
        except self.ck.KafkaException as exc:
            raise KafkaConnectorError(f"{self.where}: cannot read the cluster's metadata: {describe(exc)} "
                                      f"(is a broker listening at {source.bootstrap_servers}?)") from None
        topics = metadata.topics
        found: list[tuple[str, int]] = []
        if source.topics:
            for topic in source.topics:
                described = topics.get(topic)
                if described is None or described.error is not None or not described.partitions:
                    raise KafkaConnectorError(f"{self.where}: topic {topic!r} does not exist")
                found.extend((topic, p) for p in described.partitions)
        elif source.topic_pattern is not None:
            pattern = re.compile(source.topic_pattern)
            for topic, described in topics.items():
                if pattern.fullmatch(topic) and described.error is None:
                    found.extend((topic, p) for p in described.partitions)
        else:
            for topic, partition in source.partitions:
                described = topics.get(topic)
                if described is None or partition not in described.partitions:
                    raise KafkaConnectorError(f"{self.where}: partition {topic}-{partition} does not exist")
                found.append((topic, partition))
        return sorted(found)

    def _start(self) -> None:
        """The first poll: the partitions found now, and (unless restored) this subtask's share."""
        self.started = True
        recorded = self.runtime.input_override(recorded_ranges_key(self.source.bootstrap_servers))
        if recorded is not None:
            self._start_recorded(json.loads(recorded))
            return
        found = self._list_partitions()
        new = [tp for tp in found if tp not in self.known]
        self.known.update(found)
        if not self.restored:
            self._event(KafkaPartitionsDiscovered, partitions=[f"{t}-{p}" for t, p in new], total=len(self.known),
                        initial=True)
            self._add([tp for tp in new if split_owner(tp[0], tp[1], self.parallelism) == self.subtask],
                      self.source.starting_offsets, "initial")
        else:
            self._assign(list(self.splits.values()), "restored")
            if new:
                self._event(KafkaPartitionsDiscovered, partitions=[f"{t}-{p}" for t, p in new], total=len(self.known),
                            initial=False)
                self._add([tp for tp in new if split_owner(tp[0], tp[1], self.parallelism) == self.subtask],
                          None, "discovered")
        self._update_finished()

    def _start_recorded(self, ranges: dict[str, list[int]]) -> None:
        """A re-execution: this subtask's share of the partitions the recorded run read, each
        from the first offset it read to the offset after the last (then the reader finishes);
        no discovery, no commits."""
        self.rerun = True
        self.next_discovery = None
        self._pending_commits.clear()
        wanted = set(self._list_partitions())
        splits = []
        for name, (first, last) in sorted(ranges.items()):
            topic, _, partition = name.rpartition("-")
            tp = (topic, int(partition))
            if tp in wanted and split_owner(tp[0], tp[1], self.parallelism) == self.subtask:
                splits.append(Split(tp[0], tp[1], first, last))
        self.known.update(wanted)
        for split in splits:
            self.splits[(split.topic, split.partition)] = split
        self._assign(splits, "recorded")
        self._update_finished()

    def _discover(self) -> None:
        self.next_discovery = self.runtime.now_ms() + self.interval
        found = self._list_partitions()
        new = [tp for tp in found if tp not in self.known]
        if not new:
            return
        self.known.update(new)
        self._event(KafkaPartitionsDiscovered, partitions=[f"{t}-{p}" for t, p in new], total=len(self.known),
                    initial=False)
        self._add([tp for tp in new if split_owner(tp[0], tp[1], self.parallelism) == self.subtask], None, "discovered")

    def _add(self, partitions: list[tuple[str, int]], initializer: Any, origin: str) -> None:
        """New splits for ``partitions``, starting where ``initializer`` says (None: earliest)."""
        if not partitions:
            return
        starts = self._offsets(partitions, initializer, starting=True)
        stopping = self.source.stopping_offsets
        stops = self._offsets(partitions, stopping, starting=False) if stopping is not None else {}
        splits = [Split(t, p, starts[(t, p)], stops.get((t, p), NO_STOP)) for t, p in partitions]
        for split in splits:
            self.splits[(split.topic, split.partition)] = split
        self._assign(splits, origin)

    def _assign(self, splits: list[Split], origin: str) -> None:
        if not splits:
            return
        self._event(KafkaSplitsAssigned, partitions=[s.name for s in splits], start_offsets=[s.next for s in splits],
                    stop_offsets=[s.stop for s in splits], origin=origin)
        reading = [s for s in splits if not s.done()]
        if reading:
            tps = [self.ck.TopicPartition(s.topic, s.partition, s.next) for s in reading]
            self.consumer.incremental_assign(tps)
            self.assigned.update(s.name for s in reading)
        self.added.extend(split.name for split in splits)
        for split in splits:
            if self.metrics is not None:
                self.metrics.add_split(split)
            if split.done():
                self._release(split)

    def _offsets(self, partitions: list[tuple[str, int]], initializer: Any, starting: bool) -> dict[tuple[str, int], int]:
        """Concrete offsets of ``partitions`` by the initializer (None: earliest)."""
        kind = "earliest" if initializer is None else initializer.kind
        out: dict[tuple[str, int], int] = {}
        if kind in ("earliest", "latest"):
            for tp in partitions:
                low, high = self._watermarks(tp)
                out[tp] = low if kind == "earliest" else high
        elif kind == "timestamp":
            tps = [self.ck.TopicPartition(t, p, initializer.timestamp_ms) for t, p in partitions]
            for tp in self._call(lambda: self.consumer.offsets_for_times(tps, timeout=REQUEST_TIMEOUT_S), "offsets for times"):
                out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else self._watermarks((tp.topic, tp.partition))[1]
        elif kind == "offsets":
            for tp in partitions:
                given = initializer.offsets_by_partition.get(tp)
                low, high = self._watermarks(tp)
                if given is not None and low <= given <= high:
                    out[tp] = given
                else:
                    out[tp] = self._reset(tp, initializer.reset, low, high, given)
        else:  # committed
            tps = [self.ck.TopicPartition(t, p) for t, p in partitions]
            committed = self._call(lambda: self.consumer.committed(tps, timeout=REQUEST_TIMEOUT_S), "committed offsets")
            for tp in committed:
                key = (tp.topic, tp.partition)
                if tp.offset >= 0:
                    out[key] = tp.offset
                else:
                    low, high = self._watermarks(key)
                    out[key] = self._reset(key, initializer.reset, low, high, None)
        return out

    def _reset(self, tp: tuple[str, int], strategy: KafkaOffsetResetStrategy, low: int, high: int,
               given: int | None) -> int:
        if strategy is KafkaOffsetResetStrategy.EARLIEST:
            return low
        if strategy is KafkaOffsetResetStrategy.LATEST:
            return high
        what = f"offset {given} is out of range [{low}, {high}]" if given is not None else \
            f"group {self.source.group_id!r} has no committed offset"
        raise KafkaConnectorError(f"{self.where}: partition {tp[0]}-{tp[1]}: {what} and the offset reset strategy "
                                  "is NONE")

    def _watermarks(self, tp: tuple[str, int]) -> tuple[int, int]:
        return self._call(lambda: self.consumer.get_watermark_offsets(self.ck.TopicPartition(*tp),
                                                                      timeout=REQUEST_TIMEOUT_S), f"offsets of {tp[0]}-{tp[1]}")

    def _call(self, request: Any, what: str) -> Any:
        try:
            result = request()
        except self.ck.KafkaException as exc:
            raise KafkaConnectorError(f"{self.where}: cannot read the {what}: {describe(exc)}") from None
        if result is None:
            raise KafkaConnectorError(f"{self.where}: cannot read the {what}: no answer within {REQUEST_TIMEOUT_S:.0f} s")
        return result

    # -- reading ------------------------------------------------------------------------------

    def poll(self, limit: int) -> list:
        if not self.started:
            self._start()
        if self._errors:
            raise KafkaConnectorError(f"{self.where}: {self._errors[0]}")
        if self.next_discovery is not None and self.runtime.now_ms() >= self.next_discovery:
            self._discover()
        messages = self.consumer.consume(limit, 0) if self.splits else []
        values: list = []
        timestamps: list[int] = []
        runs: list[tuple[Any, int]] = []
        splits = self.splits
        deserialize = self.source.deserializer.deserialize
        current: Split | None = None
        count = 0
        for message in messages:
            error = message.error()
            if error is not None:
                raise KafkaConnectorError(f"{self.where}: partition {message.topic()}-{message.partition()}: {error.str()}")
            split = splits.get((message.topic(), message.partition()))
            offset = message.offset()
            if split is None or offset < split.next or (split.stop != NO_STOP and offset >= split.stop):
                continue
            try:
                value = deserialize(message.value())
            except Exception as exc:
                raise KafkaConnectorError(
                    f"{self.where}: cannot deserialize the record at offset {offset} of partition {split.name}: "
                    f"{type(exc).__name__}: {exc}") from None
            split.next = offset + 1
            if value is None:  # Flink's deserialization schemas collect no null
                continue
            if split is not current:
                if current is not None and count:
                    runs.append((current.name, count))
                current, count = split, 0
            values.append(value)
            timestamps.append(message.timestamp()[1])
            count += 1
        if current is not None and count:
            runs.append((current.name, count))
        if runs and self.metrics is not None:
            self.metrics.consumed(runs)
        if not messages:
            self._check_stops()
        self._idle = not messages
        self.timestamps = timestamps
        self.runs = runs
        return values

    def _check_stops(self) -> None:
        """Splits whose consumer position passed their stop offset (transaction markers) end."""
        bounded = [s for s in self.splits.values() if s.stop != NO_STOP]
        if not bounded:
            return
        positions = self.consumer.position([self.ck.TopicPartition(s.topic, s.partition) for s in bounded])
        for split, tp in zip(bounded, positions):
            if tp.offset >= 0 and tp.offset > split.next:
                split.next = min(tp.offset, split.stop) if split.stop != NO_STOP else tp.offset
            if split.done():
                self._release(split)
        self._update_finished()

    def _release(self, split: Split) -> None:
        """A split reached its stop offset: the consumer stops fetching it."""
        if split.released:
            return
        split.released = True
        self.released.append(split.name)
        if split.name in self.assigned:
            self.assigned.discard(split.name)
            self.consumer.incremental_unassign([self.ck.TopicPartition(split.topic, split.partition)])

    def pause_splits(self, names: list[str]) -> None:
        """Stop fetching these partitions (split-level watermark alignment)."""
        self.consumer.pause([self.ck.TopicPartition(*self._key(name)) for name in names if name in self.assigned])

    def resume_splits(self, names: list[str]) -> None:
        self.consumer.resume([self.ck.TopicPartition(*self._key(name)) for name in names if name in self.assigned])

    def _key(self, name: str) -> tuple[str, int]:
        topic, _, partition = name.rpartition("-")
        return topic, int(partition)

    def _update_finished(self) -> None:
        self.finished = (self.source.is_bounded() or self.rerun) and all(s.done() for s in self.splits.values())

    def available_at(self) -> int | None:
        if self.finished:
            return None
        return self.runtime.now_ms() + IDLE_WAIT_MS

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_splits(self) -> list:
        return [(s.topic, s.partition, s.next, s.stop) for s in self.splits.values() if not s.done()]

    def restore_splits(self, splits: list) -> None:
        self.restored = True
        for topic, partition, next_offset, stop in splits:
            self.splits[(topic, partition)] = Split(topic, partition, next_offset, stop)
        self._update_finished()

    def snapshot_enumerator(self) -> Any:
        return sorted(self.known)

    def restore_enumerator(self, states: list) -> None:
        self.restored = True
        self.known = {tuple(tp) for known in states for tp in known}

    def checkpoint_taken(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` holds the offsets now: commit them when it completes."""
        if self.source.commit_offsets_on_checkpoint() and self.started and not self.rerun:
            self._pending_commits[checkpoint_id] = {key: s.next for key, s in self.splits.items()}
        if self.started:
            self._record_read()

    def checkpoint_completed(self, checkpoint_id: int) -> None:
        """Commit checkpoint ``checkpoint_id``'s offsets to the group (asynchronously, as
        Flink's; a failure is recorded, not fatal), and drop the older ones."""
        offsets = self._pending_commits.pop(checkpoint_id, None)
        for older in [c for c in self._pending_commits if c < checkpoint_id]:
            del self._pending_commits[older]
        if not offsets or self.consumer is None:
            return
        names = [f"{t}-{p}" for t, p in offsets]
        values = list(offsets.values())
        self._commits_in_flight.append((checkpoint_id, names, values))
        try:
            self.consumer.commit(offsets=[self.ck.TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                 asynchronous=True)
        except self.ck.KafkaException as exc:
            self._on_commit(exc.args[0] if exc.args else exc, [])

    def _on_commit(self, error: Any, partitions: Any) -> None:
        """librdkafka's answer to the oldest commit in flight (in the task's thread, in ``consume``)."""
        if not self._commits_in_flight:
            return
        checkpoint_id, names, values = self._commits_in_flight.pop(0)
        if self.metrics is not None:
            self.metrics.committed(names, values, error is None)
        self._event(KafkaOffsetsCommitted, checkpoint_id=checkpoint_id, group_id=self.source.group_id or "",
                    partitions=names, offsets=values, error="" if error is None else describe_error(error))

    def _record_read(self) -> None:
        splits = list(self.splits.values())
        self._event(KafkaOffsetsConsumed, bootstrap_servers=self.source.bootstrap_servers,
                    partitions=[s.name for s in splits], first_offsets=[s.first for s in splits],
                    next_offsets=[s.next for s in splits])

    def _event(self, event_type: Any, **fields: Any) -> None:
        self.runtime.emit_task_event(event_type, **fields)
