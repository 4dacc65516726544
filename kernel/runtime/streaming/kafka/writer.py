"""Flink's ``KafkaWriter`` / ``ExactlyOnceKafkaWriter`` and ``KafkaCommitter``, chained.

Each record becomes a Kafka record: its topic (fixed, or the topic selector's), key and value
bytes from the serialization schemas, and its timestamp (the stream record's, when it has one).

* ``NONE``: records go to the producer as they come; flushed only at the end of input.
* ``AT_LEAST_ONCE``: the producer is flushed before every checkpoint barrier goes on (every
  record before the barrier acknowledged by the brokers), so a restore can only repeat records.
* ``EXACTLY_ONCE``: a transaction per subtask and checkpoint, named as Flink names them,
  ``<prefix>-<subtask>-<checkpoint id>``. Before checkpoint n's barrier the records since the
  previous barrier are sealed as transaction n's committable (pre-committed) and kept in the
  checkpoint (``streaming_committer_raw_states``); when checkpoint n completes, the
  committables up to n are committed in checkpoint order. librdkafka cannot resume a
  transaction another producer began (Flink's committer does so by reflection into the Java
  client), so a committable holds its records and its transaction is written when it is
  committed: ``init_transactions`` on its id (which fences and aborts a transaction of that id
  left open by an earlier attempt — Flink's lingering-transaction abort), the records, the
  commit marker — offset n of the group ``<prefix>-<subtask>`` in the same transaction — and the
  commit. A restored committable is committed again unless its marker shows it committed, so a
  restore neither loses nor repeats a transaction. A transaction whose producer lost its id —
  fenced by another producer of the same transactional id, or an id the broker no longer maps to
  it — is aborted and redone by a new producer (``fenced``), unless its marker shows it
  committed meanwhile, up to ``sink.committer.retries`` (10) times; Flink's committer drops such
  a transaction (its records were written before), while a committable here still holds its
  records. Any other error fails the task. (librdkafka's mock cluster draws producer ids at
  random, and two producers of different transactional ids can draw the same one: the second
  then fails with ``INVALID_PRODUCER_ID_MAPPING``.) ``transaction.timeout.ms`` is Flink's
  default, 1 h, unless set (a broker's ``transaction.max.timeout.ms`` is 15 min by default: set
  it lower, as Flink's docs say) and must exceed the checkpoint interval.
"""

from __future__ import annotations

from typing import Any

from kernel.datastream.connectors.base import DeliveryGuarantee
from kernel.runtime.kafka_events import KafkaTransactionChanged
from kernel.runtime.streaming.committer import CommittableCollector
from kernel.runtime.streaming.kafka.client import REQUEST_TIMEOUT_S, KafkaConnectorError, client_config, confluent, create, describe
from kernel.runtime.streaming.operators.sinks import SinkWriterOperator

#: the input override telling a re-execution's Kafka sinks to write nothing
RERUN_KEY = "kafka:rerun"
#: Flink's KafkaSinkBuilder default transaction timeout (ms)
DEFAULT_TRANSACTION_TIMEOUT_MS = 3_600_000
#: how often a transaction whose producer lost its id is redone (Flink's sink.committer.retries default)
COMMIT_RETRIES = 10


class KafkaWriterOperator(SinkWriterOperator):
    """KafkaSink's writer and committer, chained: records become Kafka records under the
    sink's delivery guarantee, as the module describes."""

    def open(self) -> None:
        super().open()
        sink = self.spec.function
        self.sink = sink
        self.ck = confluent()
        info = self.runtime.info
        self.subtask = info.subtask
        schema = sink.record_serializer
        self.topic, self.selector = schema.topic, schema.topic_selector
        self.key_schema, self.value_schema = schema.key_schema, schema.value_schema
        self.guarantee = sink.delivery_guarantee
        self.where = f"Kafka sink at {sink.bootstrap_servers}"
        self.errors: list[str] = []
        self.pending: list[tuple[str, bytes | None, bytes, int | None]] = []
        self.committables = CommittableCollector(self._commit)
        self.producer = None
        self.markers: dict[str, Any] = {}  # marker consumers by group
        #: a re-execution (``rill replay --rerun``) writes nothing to Kafka
        self.dry = self.runtime.input_override(RERUN_KEY) is not None
        if self.dry:
            return
        if self.guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            self.transaction_timeout = int(sink.properties.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS))
            interval = self.runtime.checkpoint_interval_ms
            if interval and self.transaction_timeout <= interval:
                raise KafkaConnectorError(
                    f"{self.where}: transaction.timeout.ms ({self.transaction_timeout}) must be larger than the "
                    f"checkpoint interval ({interval} ms), or Kafka aborts transactions before they are committed")
        else:
            self.producer = self._producer({})

    def _producer(self, forced: dict[str, Any]) -> Any:
        config = client_config(self.sink.bootstrap_servers, self.sink.properties,
                               {"linger.ms": 5, "socket.connection.setup.timeout.ms": int(REQUEST_TIMEOUT_S * 1000)},
                               {"error_cb": self._on_error, "on_delivery": self._delivered,
                                "delivery.report.only.error": True, **forced})
        return create("Producer", config, self.where)

    def _on_error(self, error: Any) -> None:
        if error.fatal() or error.code() == self.ck.KafkaError._ALL_BROKERS_DOWN:
            self.errors.append(error.str())

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.errors.append(f"record to {message.topic()}-{message.partition()} not delivered: {error.str()}")

    def _check(self) -> None:
        if self.errors:
            raise KafkaConnectorError(f"{self.where}: {self.errors[0]}")

    # -- records ------------------------------------------------------------------------------

    def _records(self, values: list, timestamps: list | None) -> list[tuple[str, bytes | None, bytes, int | None]]:
        topic, selector = self.topic, self.selector
        key_schema, serialize = self.key_schema, self.value_schema.serialize
        out = []
        stamps = timestamps if timestamps is not None else [None] * len(values)
        for value, ts in zip(values, stamps):
            out.append((topic if selector is None else selector.apply(value),
                        None if key_schema is None else key_schema.serialize(value), serialize(value),
                        ts if ts is not None and ts >= 0 else None))
        return out

    def process_batch(self, values, timestamps):
        records = self._records(values, timestamps)
        if self.dry:
            return
        if self.guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            if not self.pending and records:
                self._transaction("begun", self._checkpoint_of_next(), 0)
            self.pending.extend(records)
            return
        self._check()
        self._send(self.producer, records)

    def _checkpoint_of_next(self) -> int:
        return getattr(self, "_last_checkpoint", 0) + 1

    def _send(self, producer: Any, records: list) -> None:
        produce, poll = producer.produce, producer.poll
        for topic, key, value, ts in records:
            while True:
                try:
                    if ts is None:
                        produce(topic, value, key)
                    else:
                        produce(topic, value, key, timestamp=ts)
                    break
                except BufferError:  # the producer's queue is full: let it deliver
                    poll(0.05)
                except self.ck.KafkaException as exc:
                    raise KafkaConnectorError(f"{self.where}: cannot write to topic {topic!r}: {describe(exc)}") from None
        poll(0)

    def _flush(self) -> None:
        remaining = self.producer.flush(REQUEST_TIMEOUT_S * 6)
        self._check()
        if remaining:
            raise KafkaConnectorError(f"{self.where}: {remaining} records not acknowledged by the brokers within "
                                      f"{REQUEST_TIMEOUT_S * 6:.0f} s")

    # -- checkpoints --------------------------------------------------------------------------

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        self._last_checkpoint = checkpoint_id
        if self.dry:
            return
        if self.guarantee is DeliveryGuarantee.AT_LEAST_ONCE:
            self._flush()
        elif self.guarantee is DeliveryGuarantee.EXACTLY_ONCE and self.pending:
            committable = (self._transactional_id(self.subtask, checkpoint_id), checkpoint_id, self.subtask,
                           self.pending)
            self.pending = []
            self.committables.add(checkpoint_id, [committable])
            self._transaction("pre_committed", checkpoint_id, len(committable[3]), committable[0])

    def snapshot_state(self, snapshot: Any) -> None:
        if self.guarantee is DeliveryGuarantee.EXACTLY_ONCE:
            snapshot.add_list(self.COMMITTER_STATE, self.committables.snapshot())

    def initialize_state(self, restored: Any) -> None:
        """Commit the restored committables whose transactions are not committed yet."""
        if self.guarantee is not DeliveryGuarantee.EXACTLY_ONCE or self.dry:
            return
        entries = restored.lists.get(self.COMMITTER_STATE, [])
        if entries:
            self._last_checkpoint = max(checkpoint_id for checkpoint_id, _ in entries)
        for _, committable in sorted(entries, key=lambda pair: pair[0]):
            if self._already_committed(committable):
                self._transaction("already_committed", committable[1], len(committable[3]), committable[0])
            else:
                self._commit(committable)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        if self.guarantee is DeliveryGuarantee.EXACTLY_ONCE and not self.dry:
            self.committables.commit_up_to(checkpoint_id)

    # -- transactions -------------------------------------------------------------------------

    def _transactional_id(self, subtask: int, checkpoint_id: int) -> str:
        return f"{self.sink.transactional_id_prefix}-{subtask}-{checkpoint_id}"

    def _marker_group(self, subtask: int) -> str:
        return f"{self.sink.transactional_id_prefix}-{subtask}"

    def _marker(self, group: str) -> Any:
        consumer = self.markers.get(group)
        if consumer is None:
            config = client_config(self.sink.bootstrap_servers, {}, {}, {"group.id": group, "enable.auto.commit": False})
            consumer = self.markers[group] = create("Consumer", config, self.where)
        return consumer

    def _commit(self, committable: tuple) -> None:
        """Write and commit a committable's transaction (its records, its marker). A
        transaction whose producer lost its id is redone by a new producer (see the module)."""
        transactional_id, checkpoint_id, subtask, records = committable
        marker = self._marker(self._marker_group(subtask))
        mark = [self.ck.TopicPartition(records[0][0], 0, checkpoint_id)]
        for attempt in range(COMMIT_RETRIES + 1):
            exc = self._write_transaction(committable, marker, mark)
            if exc is None:
                break
            if attempt == COMMIT_RETRIES or self._error_code(exc) not in self._lost_id:
                raise KafkaConnectorError(f"{self.where}: transaction {transactional_id} failed: "
                                          f"{self._transaction_problem(exc)}") from None
            self._transaction("fenced", checkpoint_id, len(records), transactional_id)
            if self._already_committed(committable):
                self._transaction("already_committed", checkpoint_id, len(records), transactional_id)
                return
        self._check()
        try:  # the marker again outside the transaction, for brokers that keep no transactional offsets
            marker.commit(offsets=mark, asynchronous=False)
        except self.ck.KafkaException:
            pass  # committed already in the transaction where brokers keep them
        self._transaction("committed", checkpoint_id, len(records), transactional_id)

    def _write_transaction(self, committable: tuple, marker: Any, mark: list) -> BaseException | None:
        """One attempt at a committable's transaction (its records, the offsets ``mark`` of
        the ``marker`` consumer's group), by a producer of its own: None once committed, else
        the Kafka exception that ended it (the transaction aborted)."""
        transactional_id, checkpoint_id, _, records = committable
        producer = self._producer({"transactional.id": transactional_id,
                                   "transaction.timeout.ms": self.transaction_timeout})
        reported = len(self.errors)
        failure = None
        try:
            producer.init_transactions(REQUEST_TIMEOUT_S)
            producer.begin_transaction()
            self._send(producer, records)
            producer.send_offsets_to_transaction(mark, marker.consumer_group_metadata(), REQUEST_TIMEOUT_S)
            producer.commit_transaction(REQUEST_TIMEOUT_S * 6)
        except self.ck.KafkaException as exc:
            self._abort(producer, transactional_id, checkpoint_id)
            failure = exc
        finally:
            producer.flush(0)
        if failure is not None:
            del self.errors[reported:]  # what the failed attempt's producer reported ends with it
        return failure

    @staticmethod
    def _error_code(exc: BaseException) -> int | None:
        error = exc.args[0] if exc.args else None
        return error.code() if hasattr(error, "code") else None

    @property
    def _lost_id(self) -> frozenset[int]:
        """librdkafka's errors for a producer whose transactional id another producer took
        over (fenced), or whose producer id the broker does not map to it any more."""
        error = self.ck.KafkaError
        return frozenset({error.INVALID_PRODUCER_ID_MAPPING, error.PRODUCER_FENCED, error.INVALID_PRODUCER_EPOCH,
                          error.UNKNOWN_PRODUCER_ID, error._FENCED})

    def _transaction_problem(self, exc: BaseException) -> str:
        text = describe(exc)
        if "timeout" in text.lower() and "transaction" in text.lower():
            text += (f" (the sink's transaction.timeout.ms is {self.transaction_timeout}: a broker refuses one above "
                     "its transaction.max.timeout.ms, 15 min by default — set_property('transaction.timeout.ms', ...))")
        return text

    def _abort(self, producer: Any, transactional_id: str, checkpoint_id: int) -> None:
        try:
            producer.abort_transaction(REQUEST_TIMEOUT_S)
        except self.ck.KafkaException:
            return
        self._transaction("aborted", checkpoint_id, 0, transactional_id)

    def _already_committed(self, committable: tuple) -> bool:
        """The committable's marker is in its group: its transaction was committed."""
        _, checkpoint_id, subtask, records = committable
        marker = self._marker(self._marker_group(subtask))
        try:
            found = marker.committed([self.ck.TopicPartition(records[0][0], 0)], timeout=REQUEST_TIMEOUT_S)
        except self.ck.KafkaException as exc:
            raise KafkaConnectorError(f"{self.where}: cannot read the commit marker of group "
                                      f"{self._marker_group(subtask)!r}: {describe(exc)}") from None
        return bool(found) and found[0].offset >= checkpoint_id

    def _transaction(self, action: str, checkpoint_id: int, records: int, transactional_id: str | None = None) -> None:
        self.runtime.emit_task_event(
            KafkaTransactionChanged, transactional_id=transactional_id or self._transactional_id(self.subtask, checkpoint_id),
            checkpoint_id=checkpoint_id, action=action, records=records)

    # -- the end ------------------------------------------------------------------------------

    def end_input(self) -> None:
        if self.dry:
            return
        if self.guarantee is not DeliveryGuarantee.EXACTLY_ONCE:
            self._flush()
            return
        if self.runtime.checkpointing or not self.pending:
            return  # the final checkpoint seals and commits what is pending
        committable = (self._transactional_id(self.subtask, 0), 0, self.subtask, self.pending)
        self.pending = []
        if self.staging:
            self.stage(lambda: self._commit(committable))
        else:
            self._commit(committable)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(0)
            self.producer = None
        for consumer in self.markers.values():
            consumer.close()
        self.markers = {}
