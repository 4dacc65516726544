"""What a backend provides to the operators of a task, and the contexts user functions see."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from random import Random
from typing import TYPE_CHECKING, Any, Callable

from kernel.datastream.functions import RuntimeContext
from kernel.metrics.groups import GenericMetricGroup, TaskMetricGroup
from kernel.runtime.streaming.state import KeyedStateBackend

if TYPE_CHECKING:
    from kernel.datastream.transformations import KeySpec


#: the operator PyFlink runs a ``key_by``'s KeySelector in, in the task producing the keyed
#: stream (chained after the operator producing it): the name its metrics are reported under
KEY_BY_OPERATOR = "_stream_key_by_map_operator"


def print_to_stdout(text: str) -> None:
    """What print sinks write. A reader that closed the pipe (``rill run JOB | head``) ends
    the output, not the job: the rest goes to /dev/null (it is still in the event log)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@dataclass
class TaskInfo:
    task_name: str  # the job vertex (chain) name
    subtask: int  # 0-based
    parallelism: int
    max_parallelism: int
    attempt: int = 0
    job_parameters: dict[str, str] = field(default_factory=dict)
    vertex_id: str = ""  # the job vertex's id
    #: the operator id (hex) of each stream node of the chain
    operator_ids: dict[int, str] = field(default_factory=dict)

    @property
    def attempt_key(self) -> tuple[str, int, int]:
        return self.vertex_id, self.subtask, self.attempt

    @property
    def name_with_subtasks(self) -> str:
        return f"{self.task_name} ({self.subtask + 1}/{self.parallelism})"


class OperatorRuntime:
    """Per task: time, randomness, processing-time scheduling and settings for its operators.

    Backends subclass it: the local one schedules timers as mailbox mails on the event loop;
    a batch backend fires processing-time timers at the end of input.
    """

    def __init__(self, info: TaskInfo, rng_factory: Callable[[str], Random], batch: bool = False,
                 auto_watermark_interval: int = 200, user_metrics: TaskMetricGroup | None = None,
                 metrics_enabled: bool = True) -> None:
        self.info = info
        self.rng_factory = rng_factory
        #: BATCH execution: no watermarks but the final one (timers fire at the end of input),
        #: keyed results once per key at the end
        self.batch = batch
        self.auto_watermark_interval = 0 if batch else auto_watermark_interval
        #: when set, sinks stage their output per attempt (:mod:`kernel.runtime.streaming.committer`)
        self.sink_committer: Any = None
        #: the task takes checkpoints: two-phase-commit sinks commit when checkpoints complete
        self.checkpointing = False
        #: its interval (ms; 0 without checkpoints), which transactional sinks check their timeouts against
        self.checkpoint_interval_ms = 0
        #: the task's user metrics, which the operators' runtime contexts hand out (a backend
        #: samples those it gives; by default they work unsampled); None when
        #: ``python.metric.enabled`` is false
        self.user_metrics = (user_metrics if user_metrics is not None else TaskMetricGroup()) \
            if metrics_enabled else None
        #: copies of KeySelectors computing the keys of this task's keyed outputs (the chain
        #: opens and closes them), and their keys by partitioner
        self.key_selectors: list[Any] = []
        self._keys: dict[int, tuple[Any, KeySpec]] = {}

    def now_ms(self) -> int:
        """Processing time in ms."""
        raise NotImplementedError

    def schedule(self, when_ms: int, callback: Callable[[], None]) -> Any:
        """Run ``callback`` (in the task's thread, between records) at processing time ``when_ms``."""
        raise NotImplementedError

    def create_watermark_generator(self, strategy: Any, activity_clock: Callable[[], int] | None = None) -> Any:
        """The watermarking plugin's generator; idleness measured on ``activity_clock``
        (default: processing time)."""
        raise NotImplementedError

    def join_watermark_alignment(self, strategy: Any, on_announce: Callable[[int, int], None]) -> Any:
        """Join the job's watermark alignment (when the watermarking plugin aligns sources):
        a membership with ``update_interval_ms``, ``max_drift_ms``, ``report(watermark)``,
        ``waiting(paused, watermark)`` and ``leave()``; ``on_announce(max_allowed, group_min)``
        runs between records. None: this source reads unaligned."""
        return None

    def create_watermark_valve(self, num_channels: int) -> Any:
        raise NotImplementedError

    def create_async_executor(self, operator_name: str) -> Any:
        """Where the async operator ``operator_name`` runs its coroutines: an
        :class:`~kernel.runtime.streaming.async_io.AsyncExecutor` calling back in this task."""
        raise NotImplementedError(f"operator {operator_name!r}: this backend runs no async I/O")

    def write_stdout(self, text: str, sink: str = "", lines: int = 0) -> None:
        """A print sink's output (``lines`` lines of ``text``)."""
        raise NotImplementedError

    def open_input(self, path: str) -> str:
        """The file a source should read for ``path`` (a re-execution may substitute the
        recorded content); the backend records what it opened."""
        return path

    def input_override(self, name: str) -> str | None:
        """What a re-execution gives a source in place of its input ``name`` (a Kafka source:
        the offset ranges the recorded run read); None in an ordinary run."""
        return None

    def count(self, metric: str, amount: int = 1) -> None:
        """Add to an aggregated counter of the task (late records dropped, timers fired, ...)."""

    def emit_task_event(self, event_type: type, **fields: Any) -> None:
        """Record an event of this subtask's attempt (a :class:`~kernel.runtime.cluster_events.TaskEvent`
        type; the backend fills in the time and the attempt) — a connector's, at the pace of
        its partitions and checkpoints, never per record."""

    def record_latency(self, marker: Any) -> None:
        """A latency marker reached a sink."""

    def key_selector(self, partitioner: Any) -> KeySpec:
        """The keys of this task's keyed outputs of ``partitioner`` (a ``key_by``'s, whose
        KeySelector the user gave), from a copy of the KeySelector of the task's own: PyFlink runs
        it once per record, in an operator after the one producing the keyed stream. Every
        keyed output of one ``key_by`` (a keyed stream several operators consume) shares it, and
        the keys of a batch (which a fan-out hands to every output as one list, never modified)
        are computed once."""
        from kernel.datastream.transformations import KeySpec
        from kernel.runtime.streaming.subtask_copies import own_copy

        found = self._keys.get(id(partitioner))
        if found is not None:
            return found[1]
        key = KeySpec.of(own_copy(partitioner.key_function), partitioner.key_type)
        computed = key.keys_of
        last: list[Any] = [None, None]  # the latest batch and its keys

        def keys_of(values: list) -> list:
            if values is not last[0]:
                last[1] = computed(values)
                last[0] = values
            return last[1]

        key.keys_of = keys_of
        self._keys[id(partitioner)] = (partitioner, key)
        self.key_selectors.append(key.function)
        return key

    def operator_metric_group(self, operator: str, node_id: int | None = None) -> GenericMetricGroup | None:
        """The metric group of operator ``operator`` (stream node ``node_id``) of this task; None
        when user metrics are off."""
        metrics = self.user_metrics
        if metrics is None:
            return None
        return metrics.operator_group(operator, self.info.operator_ids.get(node_id, "") if node_id is not None else "")


class StreamingRuntimeContext(RuntimeContext):
    """``RuntimeContext`` given to ``open``: subtask info, the operator's metric group (made
    when first asked for) and, on keyed streams, keyed state."""

    def __init__(self, info: TaskInfo, backend: KeyedStateBackend | None,
                 metric_group: Callable[[], GenericMetricGroup | None] = lambda: None) -> None:
        self._info = info
        self._backend = backend
        self._metric_group = metric_group
        self._group: GenericMetricGroup | None = None

    def get_metrics_group(self) -> GenericMetricGroup | None:
        """The operator's metric group; None when ``python.metric.enabled`` is false (as PyFlink's)."""
        if self._group is None:
            self._group = self._metric_group()
        return self._group

    def get_task_name(self) -> str:
        return self._info.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        return self._info.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        return self._info.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        return self._info.subtask

    def get_attempt_number(self) -> int:
        return self._info.attempt

    def get_task_name_with_subtasks(self) -> str:
        """Flink's ``TaskInfo.getTaskNameWithSubtasks``: ``name (i/n)#attempt``."""
        return f"{self._info.name_with_subtasks}#{self._info.attempt}"

    def get_job_parameter(self, key: str, default_value: str) -> str:
        return self._info.job_parameters.get(key, default_value)

    def _keyed(self) -> KeyedStateBackend:
        if self._backend is None:
            raise Exception("This state is only accessible by functions executed on a KeyedStream.")
        return self._backend

    def get_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        return self._keyed().get_state(state_descriptor)
