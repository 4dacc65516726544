"""Base of stream operators: lifecycle, user functions, the yield-based result protocol."""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.jvm.keyhash import equal_keys_hash_equal, key_hasher
from kernel.jvm.keyidentity import state_key_function
from kernel.datastream.functions import Function
from kernel.datastream.output_tag import OutputTag
from kernel.datastream.transformations import OperatorSpec
from kernel.runtime.graph.stream import StreamNode
from kernel.runtime.streaming.handover import HandOver
from kernel.runtime.streaming.outputs import Output
from kernel.metrics.groups import unregistered_group
from kernel.runtime.streaming.runtime import KEY_BY_OPERATOR, OperatorRuntime, StreamingRuntimeContext
from kernel.runtime.streaming.keygroups import assign_to_key_group
from kernel.runtime.streaming.partitioning import KEY_CACHE_LIMIT
from kernel.runtime.streaming.state import KeyedStateBackend
from kernel.runtime.streaming.timers import EVENT_TIMERS, PROCESSING_TIMERS, InternalTimerService

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState
    from kernel.datastream.time_domain import TimeDomain
    from kernel.runtime.streaming.timers import TimerOutput


_UNSET = object()


def method_or_callable(function: Any, base: type, method: str) -> Callable[..., Any]:
    """The bound method of a Function subclass instance, or the plain callable itself."""
    return getattr(function, method) if isinstance(function, base) else function


class StreamOperator:
    """One operator of a chain. ``process_batch`` handles a buffer of records; watermarks,
    statuses and latency markers are forwarded unless an operator overrides them.

    A keyed operator with timers opens its internal timer service (``open_timer_service``)
    and implements ``on_timer``: its event-time timers fire as a watermark arrives, before it
    is forwarded, and in BATCH with sorted inputs at the end of each key (``end_key``)."""

    output: Output
    #: the internal timer service of a keyed operator with timers
    timers: InternalTimerService | None = None
    #: where its output for the batch in progress waits to be handed on (operators whose user
    #: functions produce output create it in ``open``: :mod:`kernel.runtime.streaming.handover`)
    handover: HandOver | None = None

    def __init__(self, spec: OperatorSpec, node: StreamNode, runtime: OperatorRuntime) -> None:
        self.spec = spec
        self.node = node
        self.name = node.name
        self.runtime = runtime
        self.keyed = spec.keyed
        key = next((k for k in spec.keys if k is not None), None)
        self.backend = KeyedStateBackend(runtime.now_ms, state_key_function(key.key_type)) if key is not None else None
        #: the keys of a batch of records (operators take them once per batch)
        self.keys_of = key.keys_of if key is not None else None
        self.runtime_context = StreamingRuntimeContext(
            runtime.info, self.backend, lambda: runtime.operator_metric_group(node.name, node.id))
        self.requested_side_outputs = set(spec.side_outputs)
        self.current_watermark = MIN_LONG
        self._key_group_of = _UNSET

    # -- lifecycle ----------------------------------------------------------------------------

    def user_functions(self) -> list[Any]:
        return [self.spec.function]

    def key_functions(self) -> list[Any]:
        """The subtask's copies of the ``KeySelector`` objects its keys come from. It computes
        the keys of its input again (the task producing them computed them to route the
        records): the copies are opened with a metric group that reports nothing, so a key
        selector's metrics count once per record, in the producing task."""
        return [key.function for key in self.spec.keys if key is not None and key.function is not None]

    def open(self) -> None:
        if self.key_functions():
            context = StreamingRuntimeContext(self.runtime.info, None, lambda: unregistered_group(KEY_BY_OPERATOR))
            for function in self.key_functions():
                function.open(context)
        for function in self.user_functions():
            if isinstance(function, Function):
                function.open(self.runtime_context)

    def open_timer_service(self) -> InternalTimerService:
        """Give this keyed operator its internal timer service; its timers fire ``on_timer``
        and what they emit goes on through the operator's hand-over (opened here if need be)."""
        if self.handover is None:
            self.open_handover()
        self.timers = InternalTimerService(self.backend, self, self.runtime)
        return self.timers

    def open_handover(self) -> HandOver:
        """Its :class:`HandOver` into its outputs (in ``open``: the outputs are wired)."""
        self.handover = HandOver(self.output.collect, self.output.collect_side)
        return self.handover

    def end_input(self) -> None:
        """All input consumed; the final watermark (if any) was processed before."""

    def finish(self) -> None:
        """Flush what is buffered; called head to tail after end of input."""

    def drain(self, on_drained: Callable[[], None]) -> bool:
        """Finish the work in flight (async requests): after ``finish``, and before a checkpoint
        barrier passes. True if nothing is left in flight; else False, and ``on_drained()`` runs
        in the task's thread of control once everything has finished."""
        return True

    def close(self) -> None:
        for function in [*self.user_functions(), *self.key_functions()]:
            if isinstance(function, Function):
                function.close()

    # -- checkpoints --------------------------------------------------------------------------

    def prepare_snapshot_pre_barrier(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id``'s barrier is about to go downstream: emit now what must
        be in front of it (a two-phase-commit sink hands over its pending committables)."""

    def snapshot_state(self, snapshot: OperatorSnapshot) -> None:
        """Add this operator's state to a checkpoint: keyed state and timers by key group,
        operator list state."""
        if self.backend is not None:
            self.backend.snapshot(snapshot)
        if self.timers is not None:
            self.timers.snapshot(snapshot)

    def initialize_state(self, restored: RestoredOperatorState) -> None:
        """Restore this operator's state from a checkpoint (after ``open``)."""
        if self.timers is not None:
            self.timers.restore(restored.pop_keyed(EVENT_TIMERS), restored.pop_keyed(PROCESSING_TIMERS))
        if self.backend is not None:
            self.backend.restore(restored)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed (a two-phase-commit sink commits)."""

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` was aborted."""

    def key_group_function(self) -> Callable[[Any], int] | None:
        """``key_group_of(key)`` for this operator's keys, as ``key_by`` routes them (None when
        not keyed); remembers the keys whose Python equality is Java equality (as
        :class:`kernel.runtime.streaming.partitioning.KeyGroupChannels` does, as many), from one
        checkpoint to the next."""
        if self._key_group_of is not _UNSET:
            return self._key_group_of
        key = next((k for k in self.spec.keys if k is not None), None)
        if key is None:
            self._key_group_of = None
            return None
        hasher, max_parallelism = key_hasher(key.key_type), self.runtime.info.max_parallelism

        def key_group_of(value: Any) -> int:
            return assign_to_key_group(hasher(value), max_parallelism)

        any_key = equal_keys_hash_equal(key.key_type)
        known: dict[Any, int] = {}

        def remembered(value: Any) -> int:
            kind = type(value)
            if not (any_key or kind is str or kind is int or (kind is tuple and all(type(v) in (str, int) for v in value))):
                return key_group_of(value)
            try:
                group = known.get(value)
            except TypeError:  # an unhashable key
                return key_group_of(value)
            if group is None:
                group = key_group_of(value)
                if len(known) < KEY_CACHE_LIMIT:
                    known[value] = group
            return group

        self._key_group_of = remembered
        return remembered

    # -- elements -----------------------------------------------------------------------------

    def process_batch(self, values: list, timestamps: list | None) -> None:
        raise NotImplementedError

    def process_watermark(self, timestamp: int) -> None:
        """Fire the timers the watermark is due for (if any), then forward it."""
        if self.timers is None:
            self.current_watermark = timestamp
        else:
            self.advance_timers(timestamp)
        self.output.emit_watermark(timestamp)

    def advance_timers(self, timestamp: int) -> None:
        """Event time is ``timestamp``: fire the timers due."""
        self.current_watermark = timestamp
        self.timers.advance_watermark(timestamp)  # type: ignore[union-attr]

    def on_timer(self, timestamp: int, key: Any, namespace: Any, domain: TimeDomain, out: TimerOutput) -> None:
        """One of this operator's timers fired (``key`` is the current key); what it emits goes
        to ``out`` (:class:`kernel.runtime.streaming.timers.Triggerable`)."""
        raise NotImplementedError

    def end_key(self) -> None:
        """BATCH, sorted input (``kernel.runtime.streaming.sorted_input``): every record of the current
        key went in; a keyed operator emits what the key has pending. Timers fire as at the
        final watermark, then time starts over for the next key (Flink's
        ``BatchExecutionInternalTimeService`` when the key changes)."""
        if self.timers is not None:
            self.advance_timers(MAX_LONG)
            self.current_watermark = self.timers.current_watermark = MIN_LONG

    def process_watermark_status(self, idle: bool) -> None:
        self.output.emit_watermark_status(idle)

    def process_latency_marker(self, marker: Any) -> None:
        self.output.emit_latency_marker(marker)

    # -- results of yield-based functions -----------------------------------------------------

    def emit_results(self, results: Any, timestamp: int | None, values: list, timestamps: list | None,
                     side: dict[str, tuple[list, list | None]]) -> None:
        """Route what a function returned: ``(OutputTag, value)`` to a requested side output,
        everything else (including unrequested tagged pairs, as in PyFlink) to the main output."""
        if results is None:
            return
        requested = self.requested_side_outputs
        if not requested:
            before = len(values)
            values.extend(results)
            if timestamps is not None and len(values) != before:
                timestamps.extend(repeat(timestamp, len(values) - before))
            return
        for item in results:
            if type(item) is tuple and len(item) == 2 and isinstance(item[0], OutputTag) \
                    and item[0].tag_id in requested:
                side_values, side_ts = side.setdefault(item[0].tag_id, ([], [] if timestamps is not None else None))
                side_values.append(item[1])
                if side_ts is not None:
                    side_ts.append(timestamp)
                continue
            values.append(item)
            if timestamps is not None:
                timestamps.append(timestamp)

    def flush_results(self, values: list, timestamps: list | None, side: dict[str, tuple[list, list | None]]) -> None:
        if values:
            self.output.collect(values, timestamps)
        for tag_id, (side_values, side_ts) in side.items():
            self.output.collect_side(tag_id, side_values, side_ts)


class TwoInputStreamOperator(StreamOperator):
    """Two inputs; the operator's event time is the minimum over its non-idle inputs."""

    def __init__(self, spec: OperatorSpec, node: StreamNode, runtime: OperatorRuntime) -> None:
        super().__init__(spec, node, runtime)
        self.input_watermarks = [MIN_LONG, MIN_LONG]
        self.input_idle = [False, False]
        self.keys_of_inputs = [k.keys_of if k is not None else None for k in (spec.keys or (None, None))]

    def process_batch(self, values: list, timestamps: list | None) -> None:
        raise TypeError("a two-input operator receives process_batch1/process_batch2")

    def process_batch1(self, values: list, timestamps: list | None) -> None:
        raise NotImplementedError

    def process_batch2(self, values: list, timestamps: list | None) -> None:
        raise NotImplementedError

    def next_selection(self) -> int | None:
        """The input (0 or 1) to read next, or None for either (Flink's InputSelectable)."""
        return None

    def end_input_of(self, index: int) -> None:
        """Input ``index`` (0 or 1) has ended (Flink's BoundedMultiInput.endInput)."""

    def process_watermark_input(self, index: int, timestamp: int) -> None:
        self.input_watermarks[index] = timestamp
        self._emit_combined_watermark()

    def process_watermark_status_input(self, index: int, idle: bool) -> None:
        was_idle = all(self.input_idle)
        self.input_idle[index] = idle
        now_idle = all(self.input_idle)
        if now_idle != was_idle:
            self.output.emit_watermark_status(now_idle)
        if not idle or not now_idle:
            self._emit_combined_watermark()

    def _emit_combined_watermark(self) -> None:
        active = [w for w, idle in zip(self.input_watermarks, self.input_idle) if not idle]
        if not active:
            return
        combined = min(active)
        if combined > self.current_watermark:
            self.process_watermark(combined)
