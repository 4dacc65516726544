"""Keyed operators with state and timers: KeyedProcessFunction and the rolling reduce."""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any

from kernel.clock import MAX_LONG
from kernel.jvm.keyidentity import user_key
from kernel.datastream import functions as fn
from kernel.datastream.time_domain import TimeDomain
from kernel.datastream.timerservice import TimerService
from kernel.runtime.streaming.operators.base import StreamOperator, method_or_callable

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState
    from kernel.runtime.streaming.timers import InternalTimerService, TimerOutput

#: the keyed state of a rolling reduce in a checkpoint (Flink's StreamGroupedReduceOperator)
REDUCE_STATE = "_op_state"


class KeyedTimerService(TimerService):
    """The timers of the current key (namespace None)."""

    def __init__(self, operator: StreamOperator, timers: InternalTimerService) -> None:
        self._operator = operator
        self._timers = timers
        self._register_event_time = timers.event_time_registration(None)
        if type(self).register_event_time_timer is KeyedTimerService.register_event_time_timer:
            # a function registering per record calls the registration itself, no method in between
            self.register_event_time_timer = self._register_event_time  # type: ignore[method-assign]

    def current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()

    def current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._timers.register_processing_time_timer(None, timestamp)

    def register_event_time_timer(self, timestamp: int) -> None:
        self._register_event_time(timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._timers.delete_processing_time_timer(None, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._timers.delete_event_time_timer(None, timestamp)


class KeyedContext(fn.KeyedProcessFunction.OnTimerContext):
    """Context of ``process_element`` and ``on_timer`` (``time_domain`` only meaningful there)."""

    __slots__ = ("_timestamp", "_key", "_timer_service", "_time_domain")

    def __init__(self, timer_service: TimerService) -> None:
        self._timestamp: int | None = None
        self._key: Any = None
        self._timer_service = timer_service
        self._time_domain = TimeDomain.EVENT_TIME

    def timestamp(self) -> int | None:
        return self._timestamp

    def get_current_key(self) -> Any:
        return self._key

    def timer_service(self) -> TimerService:
        return self._timer_service

    def time_domain(self) -> TimeDomain:
        return self._time_domain


class KeyedProcessOperator(StreamOperator):
    """``KeyedStream.process(KeyedProcessFunction)``."""

    def open(self) -> None:
        super().open()
        self._ctx = KeyedContext(KeyedTimerService(self, self.open_timer_service()))
        self._process = self.spec.function.process_element
        self._on_timer = self.spec.function.on_timer

    def process_batch(self, values, timestamps):
        if self.requested_side_outputs:
            self._process_with_side_outputs(values, timestamps)
            return
        ctx, process, backend = self._ctx, self._process, self.backend
        keys = self.keys_of(values)
        state_keys = backend.state_keys(keys)
        out_values: list = []
        extend = out_values.extend
        handover = self.handover
        if timestamps is None:
            handover.grown(out_values, None)
            ctx._timestamp = None
            for key, state_key, value in zip(keys, state_keys, values):
                backend.current_key = state_key
                ctx._key = key
                results = process(value, ctx)
                if results is not None:
                    extend(results)
            handover.end()
            return
        out_ts: list = []
        positions = iter(timestamps)
        handover.grown(out_values, out_ts, timestamps, positions)
        for key, state_key, value, ts in zip(keys, state_keys, values, positions):
            backend.current_key = state_key
            ctx._timestamp, ctx._key = ts, key
            results = process(value, ctx)
            if results is not None:
                before = len(out_values)
                extend(results)
                if len(out_values) != before:
                    out_ts.extend(repeat(ts, len(out_values) - before))
        handover.end()

    def _process_with_side_outputs(self, values, timestamps):
        ctx, process, backend = self._ctx, self._process, self.backend
        keys = self.keys_of(values)
        state_keys = backend.state_keys(keys)
        handover = self.handover
        out_values, out_ts, side = handover.new_results(timestamps)
        for i, value in enumerate(values):
            key = keys[i]
            backend.current_key = state_keys[i]
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp, ctx._key = ts, key
            self.emit_results(process(value, ctx), ts, out_values, out_ts, side)
        handover.end()

    def on_timer(self, timestamp: int, key: Any, namespace: Any, domain: TimeDomain, out: TimerOutput) -> None:
        ctx = self._ctx
        ctx._timestamp, ctx._key, ctx._time_domain = timestamp, key, domain
        self.emit_results(self._on_timer(timestamp, ctx), timestamp, out.values, out.timestamps, out.side)


class ReduceOperator(StreamOperator):
    """``KeyedStream.reduce`` and sum/min/max: in STREAMING every record emits its key's
    reduced value so far; in BATCH only the final value per key is emitted, at end of input."""

    def open(self) -> None:
        super().open()
        function = self.spec.function
        self._reduce = method_or_callable(function, fn.ReduceFunction, "reduce")
        #: only a Function gets a runtime context, to read keyed state under the current key:
        #: for a plain callable the key is set once per batch, to the last record's
        self._key_per_record = isinstance(function, fn.Function)
        self._values: dict[Any, Any] = {}
        self.open_handover()

    def process_batch(self, values, timestamps):
        reduce, state, backend = self._reduce, self._values, self.backend
        keys = backend.state_keys(self.keys_of(values))
        get = state.get
        view = backend.shared_views.get(id(state))
        if view is not None:  # a snapshot's view shares the values: the function may change its own only
            own, shared = backend.own, view.get

            def get(key: Any) -> Any:
                current = state.get(key)
                if current is not None and current is shared(key):
                    return own(state, key, current)
                return current

        if self.runtime.batch:
            for key, value in zip(keys, values):
                backend.current_key = key
                current = get(key)
                state[key] = value if current is None else reduce(current, value)
            return
        out: list = []
        append = out.append
        handover = self.handover
        handover.mapped(out, timestamps)
        if self._key_per_record:
            for key, value in zip(keys, values):
                backend.current_key = key
                current = get(key)
                if current is not None:
                    value = reduce(current, value)
                state[key] = value
                append(value)
        else:
            for key, value in zip(keys, values):
                current = get(key)
                if current is not None:
                    value = reduce(current, value)
                state[key] = value
                append(value)
            if keys:
                backend.current_key = keys[-1]
        handover.end()

    def snapshot_state(self, snapshot: OperatorSnapshot) -> None:
        super().snapshot_state(snapshot)
        if self._values:
            view = self.backend.share(self._values)
            snapshot.defer(lambda into: into.add_keyed(REDUCE_STATE, "value", (
                (user_key(key), None, value) for key, value in view.items())))

    def initialize_state(self, restored: RestoredOperatorState) -> None:
        restored_key = self.backend.restored_key
        self._values.update((restored_key(key), value) for key, _, value in restored.pop_keyed(REDUCE_STATE))
        super().initialize_state(restored)

    def process_watermark(self, timestamp: int) -> None:
        """BATCH: the final watermark emits each key's value (at MAX_LONG, as Flink's
        ``BatchGroupedReduceOperator``) before it is forwarded."""
        if timestamp == MAX_LONG and self.runtime.batch:
            self.end_key()
        super().process_watermark(timestamp)

    def end_key(self) -> None:
        """BATCH: emit the value of each key reduced so far (with sorted input: of the current key)."""
        if self._values:
            values, self._values = self._values, {}
            self.output.collect(list(values.values()), [MAX_LONG] * len(values))
