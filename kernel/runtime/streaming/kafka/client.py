"""The Kafka client: confluent-kafka imported when a subtask first needs it, the librdkafka
configuration a reader or writer gets from its builder's settings, and the one-line errors that
name the broker, topic, partition and offset."""

from __future__ import annotations

from typing import Any

#: what the job's settings may hold that is Flink's or rill's, not librdkafka's
CONNECTOR_KEYS = frozenset({
    "partition.discovery.interval.ms", "commit.offsets.on.checkpoint", "client.id.prefix", "register.consumer.metrics",
    "key.deserializer", "value.deserializer", "key.serializer", "value.serializer", "bootstrap.servers",
})
#: how long a metadata or offsets request to the brokers may take before the subtask fails
REQUEST_TIMEOUT_S = 10.0
INSTALL = "pip install 'rill[kafka]'"


class KafkaConnectorError(RuntimeError):
    """A Kafka source or sink cannot go on: one line naming the broker, topic, partition, offset."""


def confluent() -> Any:
    """The ``confluent_kafka`` module (the ``kafka`` extra)."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise KafkaConnectorError(f"the Kafka connector needs confluent-kafka ({exc}): {INSTALL}") from None
    return confluent_kafka


def client_config(servers: str, properties: dict[str, str], defaults: dict[str, Any],
                  forced: dict[str, Any]) -> dict[str, Any]:
    """librdkafka's configuration: ``defaults``, the job's properties over them (but rill's and
    Flink's own keys), ``forced`` over everything; librdkafka's log lines off unless the job
    sets ``log_level``."""
    config: dict[str, Any] = {"bootstrap.servers": servers, "log_level": 0, **defaults}
    config.update((key, value) for key, value in properties.items() if key not in CONNECTOR_KEYS)
    config.update(forced)
    return config


def create(kind: str, config: dict[str, Any], what: str) -> Any:
    """A ``Consumer`` or ``Producer``; an invalid property is one line naming it."""
    module = confluent()
    try:
        return getattr(module, kind)(config)
    except (module.KafkaException, ValueError, TypeError) as exc:
        raise KafkaConnectorError(f"{what}: invalid Kafka client configuration: {describe(exc)}") from None


def describe(exc: BaseException) -> str:
    """A Kafka exception as a short phrase (its error's text)."""
    args = getattr(exc, "args", ())
    error = args[0] if args else None
    text = error.str() if hasattr(error, "str") else str(exc)
    return text.rstrip(".")


def describe_error(error: Any) -> str:
    """A ``KafkaError`` (or an exception) as a short phrase."""
    return error.str() if hasattr(error, "str") else describe(error)
