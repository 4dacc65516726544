"""The event schema: one tagged union of frozen msgspec Structs.

Rules (the tag is a file format):
- every event class names a past-tense fact and has an explicit, snake_case ``tag``;
- a tag is never renamed or reused; a field is never renamed or retyped;
- every field added later gets a default, so old payloads still decode.

``seq`` (position in the run's sequence) is assigned by the event bus; ``time`` is the
kernel clock in nanoseconds when the event happened, given by the emitter. The run id is
carried by the batch and stored with every row of the log.
"""

from __future__ import annotations

import functools
import re
from typing import Any, ClassVar, Iterable

import msgspec


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", gc=False):
    """Base of every runtime event."""

    seq: int = 0
    time: int = 0

    #: "default" events are always recorded; "debug" ones only with ``eventlog.level = "debug"``.
    level: ClassVar[str] = "default"
    #: fields that describe where the run happened rather than what it did (process ids, hosts,
    #: the directories its state went to): recorded like any other, but a re-execution of the
    #: run is not expected to repeat them (``rill replay --rerun`` leaves them out)
    environment: ClassVar[tuple[str, ...]] = ()


def tag_of(event_type: type[Event]) -> str:
    return event_type.__struct_config__.tag  # type: ignore[return-value]


_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


@functools.cache
def _required_fields(event_type: type[Event]) -> tuple[str, ...]:
    """The fields without a default, from the Struct's own layout (its defaults belong to its
    last fields; a required keyword-only field among them has NODEFAULT) — resolving its
    annotations, as ``msgspec.structs.fields`` does, would cost a run's start ~10 ms."""
    names, defaults = event_type.__struct_fields__, event_type.__struct_defaults__
    first_default = len(names) - len(defaults)
    return tuple(name for i, name in enumerate(names)
                 if i < first_default or defaults[i - first_default] is msgspec.NODEFAULT)


class EventRegistry:
    """All event types of a process, by tag, and the decoders of their union."""

    def __init__(self, types: Iterable[type[Event]] = ()) -> None:
        self._by_tag: dict[str, type[Event]] = {}
        self._decoders: dict[str, Any] = {}
        for event_type in types:
            self.register(event_type)

    def register(self, event_type: type[Event]) -> None:
        if not (isinstance(event_type, type) and issubclass(event_type, Event)):
            raise TypeError(f"{event_type!r} is not a subclass of kernel.events.Event")
        tag = tag_of(event_type)
        if not isinstance(tag, str) or not _SNAKE.match(tag):
            raise ValueError(
                f"event {event_type.__name__} needs an explicit snake_case tag, e.g. "
                f"class {event_type.__name__}(Event, tag=\"...\")"
            )
        existing = self._by_tag.get(tag)
        if existing is not None and existing is not event_type:
            raise ValueError(
                f"event tag {tag!r} is used by both {existing.__qualname__} and {event_type.__qualname__}"
            )
        for name in _required_fields(event_type):
            raise ValueError(f"field {event_type.__name__}.{name} needs a default")
        self._by_tag[tag] = event_type
        self._decoders.clear()

    def types(self) -> list[type[Event]]:
        return [self._by_tag[tag] for tag in sorted(self._by_tag)]

    def __contains__(self, tag: str) -> bool:
        return tag in self._by_tag

    def decoder(self, protocol: str = "msgpack") -> Any:
        """A reusable decoder of the union of all registered events."""
        if protocol not in self._decoders:
            union = Any if not self._by_tag else _union(self.types())
            module = msgspec.msgpack if protocol == "msgpack" else msgspec.json
            self._decoders[protocol] = module.Decoder(union)
        return self._decoders[protocol]


def environment_fields(types: Iterable[type[Event]]) -> dict[str, tuple[str, ...]]:
    """Tag -> the fields of that event type that describe the environment, for the types that
    have any."""
    return {tag_of(t): t.environment for t in types if t.environment}


def _union(types: list[type[Event]]) -> Any:
    union = types[0]
    for event_type in types[1:]:
        union = union | event_type
    return union


# -------------------------------------------------------------------------------------------
# Kernel events: runs and messaging.
# -------------------------------------------------------------------------------------------


class RunStarted(Event, tag="run_started"):
    job_name: str = ""
    clock: str = ""
    seed: int = 0


class RunFinished(Event, tag="run_finished"):
    status: str = ""
    reason: str = ""


class MessageDropped(Event, tag="message_dropped"):
    """A message was dropped by injected network conditions."""

    sender: str = ""
    receiver: str = ""
    message: str = ""


class MessageDelayed(Event, tag="message_delayed"):
    """A message was delayed by injected network conditions."""

    sender: str = ""
    receiver: str = ""
    message: str = ""
    delay_ms: float = 0.0


class ConnectionRejected(Event, tag="connection_rejected"):
    """A process of the run dropped a TCP peer (:mod:`kernel.remoting.security`): it did not prove it
    belongs to the run (the secret, the certificate), or sent a frame no process of the run
    sends. ``role`` is what the connection is for (``rpc``: the cluster's messaging hub,
    ``partition``: a TaskExecutor's partitions, ``task-channel``: the Spark driver's channel to
    its tasks); ``address`` this process's end, ``peer`` the other's; ``reason`` why."""

    environment = ("address", "peer")

    role: str = ""
    address: str = ""
    peer: str = ""
    reason: str = ""


# -------------------------------------------------------------------------------------------
# Kernel events: compiling a job.
# -------------------------------------------------------------------------------------------


class StreamGraphCompiled(Event, tag="stream_graph_compiled"):
    job_name: str = ""
    nodes: int = 0
    edges: int = 0
    sources: int = 0
    sinks: int = 0


class JobGraphCompiled(Event, tag="job_graph_compiled"):
    job_id: str = ""
    job_name: str = ""
    vertices: int = 0
    edges: int = 0
    operators: int = 0
    chained_operators: int = 0
    slot_sharing_groups: int = 0


class JobVertexDefined(Event, tag="job_vertex_defined"):
    """One JobVertex of the compiled job (the job graph can be redrawn from the log)."""

    job_id: str = ""
    vertex_id: str = ""
    name: str = ""
    parallelism: int = 0
    max_parallelism: int = -1
    slot_sharing_group: str = ""
    invokable: str = ""
    operators: list[str] = []
    operator_ids: list[str] = []


class JobEdgeDefined(Event, tag="job_edge_defined"):
    job_id: str = ""
    source_vertex_id: str = ""
    target_vertex_id: str = ""
    ship_strategy: str = ""
    distribution_pattern: str = ""
    result_type: str = ""


class ExecutionGraphCompiled(Event, tag="execution_graph_compiled"):
    job_id: str = ""
    job_vertices: int = 0
    execution_vertices: int = 0
    intermediate_results: int = 0
    result_partitions: int = 0


KERNEL_EVENT_TYPES: tuple[type[Event], ...] = (
    RunStarted, RunFinished, MessageDropped, MessageDelayed, ConnectionRejected, StreamGraphCompiled, JobGraphCompiled,
    JobVertexDefined, JobEdgeDefined, ExecutionGraphCompiled,
)
