"""PyFlink's ``pyflink.datastream.connectors.kafka``: ``KafkaSource`` and ``KafkaSink`` (Flink's
FLIP-27 source and Sink V2 sink) with their builders, offsets initializers and record
serialization schema.

Defining a job needs no Kafka client: the builders only record settings. The client
(``confluent-kafka``, the ``kafka`` extra) is imported when a subtask opens its reader or writer
(:mod:`kernel.runtime.streaming.kafka`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Callable

from kernel.pyflink import unsupported
from kernel.common.typeinfo import TypeInformation, Types
from kernel.datastream.connectors.base import DeliveryGuarantee

__all__ = [
    "DeliveryGuarantee", "KafkaOffsetResetStrategy", "KafkaOffsetsInitializer", "KafkaRecordSerializationSchema",
    "KafkaRecordSerializationSchemaBuilder", "KafkaSink", "KafkaSinkBuilder", "KafkaSource", "KafkaSourceBuilder",
    "KafkaTopicPartition", "KafkaTopicSelector",
]

#: Flink's ``partition.discovery.interval.ms`` default (KafkaSourceOptions)
DEFAULT_DISCOVERY_INTERVAL_MS = 300_000
#: Flink's KafkaSink transactional id prefix limit (MAXIMUM_PREFIX_BYTES)
MAX_PREFIX_BYTES = 64_000


class KafkaTopicPartition:
    """A topic's partition (Kafka's ``TopicPartition``)."""

    def __init__(self, topic: str, partition: int) -> None:
        self._topic = topic
        self._partition = partition

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def partition(self) -> int:
        return self._partition

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KafkaTopicPartition) and (self._topic, self._partition) == (other._topic, other._partition)

    def __hash__(self) -> int:
        return 31 * (31 + self._partition) + hash(self._topic)

    def __repr__(self) -> str:
        return f"{self._topic}-{self._partition}"


class KafkaOffsetResetStrategy(Enum):
    """Where to start when no offset is known (Kafka's ``OffsetResetStrategy``)."""

    LATEST = 0
    EARLIEST = 1
    NONE = 2


class KafkaOffsetsInitializer:
    """Starting or stopping offsets of every partition: ``kind`` is ``earliest``, ``latest``,
    ``committed`` (the group's offsets, else ``reset``), ``timestamp`` (the first record at or
    after ``timestamp`` ms, else the end) or ``offsets`` (given per partition, else ``reset``)."""

    def __init__(self, kind: str, reset: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE,
                 timestamp: int | None = None, offsets: dict[tuple[str, int], int] | None = None) -> None:
        self.kind = kind
        self.reset = reset
        self.timestamp_ms = timestamp
        self.offsets_by_partition = offsets or {}

    @staticmethod
    def committed_offsets(offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.NONE
                          ) -> KafkaOffsetsInitializer:
        """The consumer group's committed offsets; where there is none, ``offset_reset_strategy``
        (NONE: an error)."""
        return KafkaOffsetsInitializer("committed", _reset_strategy(offset_reset_strategy))

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The offset of the first record whose timestamp is at least ``timestamp`` (ms)."""
        if not isinstance(timestamp, int) or isinstance(timestamp, bool):
            raise TypeError(f"timestamp must be an int (ms), not {timestamp!r}")
        return KafkaOffsetsInitializer("timestamp", KafkaOffsetResetStrategy.LATEST, timestamp=timestamp)

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("earliest", KafkaOffsetResetStrategy.EARLIEST)

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("latest", KafkaOffsetResetStrategy.LATEST)

    @staticmethod
    def offsets(offsets: dict[KafkaTopicPartition, int],
                offset_reset_strategy: KafkaOffsetResetStrategy = KafkaOffsetResetStrategy.EARLIEST
                ) -> KafkaOffsetsInitializer:
        """These offsets; a partition not given, or given an offset out of range, starts as
        ``offset_reset_strategy`` says."""
        by_partition = {}
        for tp, offset in offsets.items():
            if not isinstance(tp, KafkaTopicPartition):
                raise TypeError(f"offsets are keyed by KafkaTopicPartition, not {tp!r}")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise ValueError(f"offset of {tp!r} must be a non-negative int, not {offset!r}")
            by_partition[(tp.topic, tp.partition)] = offset
        return KafkaOffsetsInitializer("offsets", _reset_strategy(offset_reset_strategy), offsets=by_partition)

    def __repr__(self) -> str:
        return f"KafkaOffsetsInitializer.{self.kind}"


def _reset_strategy(value: Any) -> KafkaOffsetResetStrategy:
    if not isinstance(value, KafkaOffsetResetStrategy):
        raise TypeError(f"offset_reset_strategy must be a KafkaOffsetResetStrategy, not {value!r}")
    return value


class Boundedness(Enum):
    CONTINUOUS_UNBOUNDED = "CONTINUOUS_UNBOUNDED"
    BOUNDED = "BOUNDED"


@unsupported.members("pyflink.datastream.connectors.kafka:KafkaSource")
class KafkaSource:
    """Reads Kafka partitions as Flink's KafkaSource does (:mod:`kernel.runtime.streaming.kafka.reader`):
    each partition a split with its offset in checkpoints, partitions assigned to the subtasks by
    Flink's owner rule, Kafka record timestamps as event time, watermarks per partition."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.bootstrap_servers: str = settings["bootstrap_servers"]
        self.topics: list[str] = settings["topics"]
        self.topic_pattern: str | None = settings["topic_pattern"]
        self.partitions: list[tuple[str, int]] = settings["partitions"]
        self.group_id: str | None = settings["group_id"]
        self.client_id_prefix: str = settings["client_id_prefix"]
        self.starting_offsets: KafkaOffsetsInitializer = settings["starting_offsets"]
        self.stopping_offsets: KafkaOffsetsInitializer | None = settings["stopping_offsets"]
        self.boundedness: Boundedness = settings["boundedness"]
        self.deserializer: Any = settings["deserializer"]
        self.properties: dict[str, str] = settings["properties"]

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    def produced_type(self) -> TypeInformation:
        produced = getattr(self.deserializer, "produced_type", None)
        return produced() if produced is not None else Types.PICKLED_BYTE_ARRAY()

    def is_bounded(self) -> bool:
        return self.boundedness is Boundedness.BOUNDED

    def discovery_interval_ms(self) -> int:
        """``partition.discovery.interval.ms`` (≤ 0: no discovery; a bounded source discovers nothing)."""
        if self.is_bounded():
            return -1
        return int(self.properties.get("partition.discovery.interval.ms", DEFAULT_DISCOVERY_INTERVAL_MS))

    def commit_offsets_on_checkpoint(self) -> bool:
        """``commit.offsets.on.checkpoint`` (true by default, false without a group id)."""
        if not self.group_id:
            return False
        return str(self.properties.get("commit.offsets.on.checkpoint", "true")).lower() == "true"

    #: a Kafka job runs on the wall clock, with the Kafka client (checked before the run starts)
    realtime_only = "a Kafka source reads a broker over the network as time passes on the wall clock"
    client_module = "confluent_kafka"

    def describe(self) -> str:
        what = ",".join(self.topics) or self.topic_pattern or ",".join(f"{t}-{p}" for t, p in self.partitions)
        return f"KafkaSource({what} at {self.bootstrap_servers})"

    def __repr__(self) -> str:
        return self.describe()


class KafkaSourceBuilder:
    """Builds a :class:`KafkaSource`; bootstrap servers, the topics (or a pattern, or
    partitions) and a value deserializer are required."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._topics: list[str] = []
        self._topic_pattern: str | None = None
        self._partitions: list[tuple[str, int]] = []
        self._group_id: str | None = None
        self._client_id_prefix: str | None = None
        self._starting = KafkaOffsetsInitializer.earliest()
        self._stopping: KafkaOffsetsInitializer | None = None
        self._boundedness = Boundedness.CONTINUOUS_UNBOUNDED
        self._deserializer: Any = None
        self._properties: dict[str, str] = {}

    def build(self) -> KafkaSource:
        servers = self._bootstrap_servers or self._properties.get("bootstrap.servers")
        if not servers:
            raise ValueError("KafkaSource needs set_bootstrap_servers(...)")
        subscriptions = sum(bool(x) for x in (self._topics, self._topic_pattern, self._partitions))
        if subscriptions != 1:
            raise ValueError("KafkaSource needs exactly one of set_topics, set_topic_pattern and set_partitions")
        if self._deserializer is None:
            raise ValueError("KafkaSource needs set_value_only_deserializer(...)")
        group_id = self._group_id or self._properties.get("group.id")
        if self._starting.kind == "committed" and not group_id:
            raise ValueError("KafkaOffsetsInitializer.committed_offsets() needs a group id (set_group_id)")
        prefix = self._client_id_prefix or self._properties.get("client.id.prefix") or group_id or "KafkaSource"
        return KafkaSource({
            "bootstrap_servers": servers, "topics": list(self._topics), "topic_pattern": self._topic_pattern,
            "partitions": list(self._partitions), "group_id": group_id, "client_id_prefix": prefix,
            "starting_offsets": self._starting, "stopping_offsets": self._stopping,
            "boundedness": self._boundedness, "deserializer": self._deserializer,
            "properties": dict(self._properties),
        })

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._bootstrap_servers = _text(bootstrap_servers, "bootstrap_servers")
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._group_id = _text(group_id, "group_id")
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        if len(topics) == 1 and isinstance(topics[0], (list, tuple)):
            topics = tuple(topics[0])
        self._topics = [_text(topic, "topic") for topic in topics]
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        try:
            re.compile(topic_pattern)
        except (re.error, TypeError) as exc:
            raise ValueError(f"invalid topic pattern {topic_pattern!r}: {exc}") from None
        self._topic_pattern = topic_pattern
        return self

    def set_partitions(self, partitions: set[KafkaTopicPartition]) -> KafkaSourceBuilder:
        parts = []
        for tp in partitions:
            if not isinstance(tp, KafkaTopicPartition):
                raise TypeError(f"set_partitions takes KafkaTopicPartition objects, not {tp!r}")
            parts.append((tp.topic, tp.partition))
        self._partitions = sorted(parts)
        return self

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        self._starting = _initializer(starting_offsets_initializer)
        return self

    def set_unbounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Stop each partition at these offsets; the source stays unbounded (it never finishes,
        as Flink's, although PyFlink's docs say it exits)."""
        self._stopping = _initializer(stopping_offsets_initializer)
        self._boundedness = Boundedness.CONTINUOUS_UNBOUNDED
        return self

    def set_bounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer) -> KafkaSourceBuilder:
        """Stop each partition at these offsets and finish when all have (no partition discovery)."""
        self._stopping = _initializer(stopping_offsets_initializer)
        self._boundedness = Boundedness.BOUNDED
        return self

    def set_value_only_deserializer(self, deserialization_schema: Any) -> KafkaSourceBuilder:
        if not callable(getattr(deserialization_schema, "deserialize", None)):
            raise TypeError(f"{deserialization_schema!r} is no deserialization schema (it has no deserialize)")
        self._deserializer = deserialization_schema
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        self._client_id_prefix = _text(prefix, "client id prefix")
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        self._properties[_text(key, "property key")] = str(value)
        return self

    def set_properties(self, props: dict) -> KafkaSourceBuilder:
        for key, value in props.items():
            self.set_property(key, value)
        return self


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty str, not {value!r}")
    return value


def _initializer(value: Any) -> KafkaOffsetsInitializer:
    if not isinstance(value, KafkaOffsetsInitializer):
        raise TypeError(f"expected a KafkaOffsetsInitializer, not {value!r}")
    return value


# -- the sink -----------------------------------------------------------------------------------


class KafkaTopicSelector(ABC):
    """Selects the topic of a record."""

    @abstractmethod
    def apply(self, data: Any) -> str:
        pass


class _FunctionTopicSelector(KafkaTopicSelector):
    def __init__(self, function: Callable[[Any], str]) -> None:
        self._function = function

    def apply(self, data: Any) -> str:
        return self._function(data)


class KafkaRecordSerializationSchema:
    """How a record becomes a Kafka record: its topic (fixed or selected), key and value bytes."""

    def __init__(self, topic: str | None, topic_selector: KafkaTopicSelector | None, key_schema: Any,
                 value_schema: Any) -> None:
        self.topic = topic
        self.topic_selector = topic_selector
        self.key_schema = key_schema
        self.value_schema = value_schema

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._topic_selector: KafkaTopicSelector | None = None
        self._key_schema: Any = None
        self._value_schema: Any = None

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None and self._topic_selector is None:
            raise ValueError("KafkaRecordSerializationSchema needs set_topic or set_topic_selector")
        if self._value_schema is None:
            raise ValueError("KafkaRecordSerializationSchema needs set_value_serialization_schema")
        return KafkaRecordSerializationSchema(self._topic, self._topic_selector, self._key_schema, self._value_schema)

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        self._topic = _text(topic, "topic")
        self._topic_selector = None
        return self

    def set_topic_selector(self, topic_selector: Callable[[Any], str] | KafkaTopicSelector
                           ) -> KafkaRecordSerializationSchemaBuilder:
        if not isinstance(topic_selector, KafkaTopicSelector) and not callable(topic_selector):
            raise TypeError("topic_selector must be KafkaTopicSelector or a callable")
        if not isinstance(topic_selector, KafkaTopicSelector):
            topic_selector = _FunctionTopicSelector(topic_selector)
        self._topic_selector = topic_selector
        self._topic = None
        return self

    def set_key_serialization_schema(self, key_serialization_schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._key_schema = _serializer(key_serialization_schema)
        return self

    def set_value_serialization_schema(self, value_serialization_schema: Any) -> KafkaRecordSerializationSchemaBuilder:
        self._value_schema = _serializer(value_serialization_schema)
        return self


def _serializer(schema: Any) -> Any:
    if not callable(getattr(schema, "serialize", None)):
        raise TypeError(f"{schema!r} is no serialization schema (it has no serialize)")
    return schema


@unsupported.members("pyflink.datastream.connectors.kafka:KafkaSink")
class KafkaSink:
    """Writes records to Kafka as Flink's KafkaSink does (:mod:`kernel.runtime.streaming.kafka.writer`):
    NONE, AT_LEAST_ONCE (flushed before every checkpoint barrier) or EXACTLY_ONCE (a transaction
    per subtask and checkpoint, committed when the checkpoint completes)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.bootstrap_servers: str = settings["bootstrap_servers"]
        self.delivery_guarantee: DeliveryGuarantee = settings["delivery_guarantee"]
        self.transactional_id_prefix: str | None = settings["transactional_id_prefix"]
        self.record_serializer: KafkaRecordSerializationSchema = settings["record_serializer"]
        self.properties: dict[str, str] = settings["properties"]

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        return KafkaSinkBuilder()

    #: a Kafka job runs on the wall clock, with the Kafka client (checked before the run starts)
    realtime_only = "a Kafka sink writes to a broker over the network as time passes on the wall clock"
    client_module = "confluent_kafka"

    def describe(self) -> str:
        schema = self.record_serializer
        return f"KafkaSink({schema.topic or 'selected topics'} at {self.bootstrap_servers}, " \
               f"{self.delivery_guarantee.name})"

    def __repr__(self) -> str:
        return self.describe()


class KafkaSinkBuilder:
    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._guarantee = DeliveryGuarantee.NONE
        self._prefix: str | None = None
        self._serializer: KafkaRecordSerializationSchema | None = None
        self._properties: dict[str, str] = {}

    def build(self) -> KafkaSink:
        servers = self._bootstrap_servers or self._properties.get("bootstrap.servers")
        if not servers:
            raise ValueError("KafkaSink needs set_bootstrap_servers(...)")
        if self._serializer is None:
            raise ValueError("KafkaSink needs set_record_serializer(...)")
        if self._guarantee is DeliveryGuarantee.EXACTLY_ONCE and not self._prefix:
            raise ValueError("KafkaSink with DeliveryGuarantee.EXACTLY_ONCE needs set_transactional_id_prefix(...)")
        return KafkaSink({
            "bootstrap_servers": servers, "delivery_guarantee": self._guarantee,
            "transactional_id_prefix": self._prefix, "record_serializer": self._serializer,
            "properties": dict(self._properties),
        })

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._bootstrap_servers = _text(bootstrap_servers, "bootstrap_servers")
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        if not isinstance(delivery_guarantee, DeliveryGuarantee):
            raise TypeError(f"delivery_guarantee must be a DeliveryGuarantee, not {delivery_guarantee!r}")
        self._guarantee = delivery_guarantee
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        prefix = _text(transactional_id_prefix, "transactional id prefix")
        if len(prefix.encode("utf-8")) > MAX_PREFIX_BYTES:
            raise ValueError(f"the transactional id prefix is longer than {MAX_PREFIX_BYTES} bytes (UTF-8)")
        self._prefix = prefix
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema) -> KafkaSinkBuilder:
        if not isinstance(record_serializer, KafkaRecordSerializationSchema):
            raise TypeError("set_record_serializer takes a KafkaRecordSerializationSchema "
                            "(KafkaRecordSerializationSchema.builder()...build())")
        self._serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        self._properties[_text(key, "property key")] = str(value)
        return self


__getattr__ = unsupported.module_getattr(__name__)
