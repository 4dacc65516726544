"""Broadcast process operators: Flink's CoBroadcastWithNonKeyedOperator and
CoBroadcastWithKeyedOperator, which PyFlink names "Co-Process-Broadcast" and
"Keyed-Co-Process-Broadcast".

Input 1 is the (keyed or non-keyed) stream, handed to ``process_element`` with a read-only
view of the broadcast state; input 2 is the broadcast stream, handed to
``process_broadcast_element`` with the read-write state. The broadcast state is the
operator's :class:`OperatorStateBackend` (``operator_state_backend``), one per parallel
instance. Event time is the minimum of both inputs' watermarks, as for every two-input
operator; the keyed variant's timers fire on it and call ``on_timer``.

In BATCH execution the broadcast input is read to its end before the other one (Flink's
``Batch...CoBroadcast...Operator`` select the second input until it ends).

The contexts carry the names of PyFlink's (process mode), so that misuse fails as it does
there. The broadcast side's context of a KeyedBroadcastProcessFunction has Flink's
``apply_to_keyed_state(state_descriptor, function)`` (``applyToKeyedState``), which PyFlink
2.3's Python context lacks: ``function(key, state)`` for every key with state of the descriptor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import MIN_LONG
from kernel.datastream import functions as fn
from kernel.datastream.state import MapStateDescriptor, StateDescriptor
from kernel.datastream.time_domain import TimeDomain
from kernel.datastream.timerservice import TimerService
from kernel.runtime.streaming.broadcast_state import OperatorStateBackend
from kernel.runtime.streaming.operators.base import TwoInputStreamOperator
from kernel.runtime.streaming.operators.basic import NonKeyedTimerService
from kernel.runtime.streaming.operators.keyed import KeyedTimerService

if TYPE_CHECKING:
    from kernel.runtime.streaming.timers import TimerOutput

BROADCAST_INPUT = 1


class _Context:
    """What every context has: the element's timestamp (Long.MIN_VALUE when it has none, as
    PyFlink passes it), processing time, the operator's watermark and a timer service (PyFlink
    gives one to every context; only the keyed side's can register timers)."""

    def __init__(self, operator: _BroadcastOperator, timers: TimerService) -> None:
        self._operator = operator
        self._timer_service = timers
        self._timestamp = MIN_LONG

    def timestamp(self) -> int:
        return self._timestamp

    def current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()

    def current_watermark(self) -> int:
        return self._operator.current_watermark

    def timer_service(self) -> TimerService:
        return self._timer_service


class _ReadWrite(_Context):
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> Any:
        return self._operator.operator_state_backend.get_broadcast_state(state_descriptor)


class _ReadOnly(_Context):
    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> Any:
        state = self._operator.operator_state_backend.get_broadcast_state(state_descriptor)
        return state.to_read_only_broadcast_state()


class _Keyed(_ReadOnly):
    def __init__(self, operator: _BroadcastOperator, timers: TimerService) -> None:
        super().__init__(operator, timers)
        self._key: Any = None

    def get_current_key(self) -> Any:
        return self._key


class InternalBroadcastProcessFunctionContext(_ReadWrite, fn.BroadcastProcessFunction.Context):
    pass


class InternalBroadcastProcessFunctionReadOnlyContext(_ReadOnly, fn.BroadcastProcessFunction.ReadOnlyContext):
    pass


class InternalKeyedBroadcastProcessFunctionContext(_ReadWrite, fn.KeyedBroadcastProcessFunction.Context):
    def apply_to_keyed_state(self, state_descriptor: StateDescriptor, function: Callable[[Any, Any], Any]) -> None:
        """Flink's ``applyToKeyedState``: ``function(key, state)`` for every key that has state
        of ``state_descriptor``, in the order the keyed state backend holds the keys, ``state``
        being the state object ``process_element`` gets for that key (read and write it as
        there). Each key becomes the current key in turn, and the last one stays current, as in
        Flink (a timer registered afterwards is for that key)."""
        self._operator.backend.apply_to_all_keys(state_descriptor, function)


class InternalKeyedBroadcastProcessFunctionReadOnlyContext(_Keyed, fn.KeyedBroadcastProcessFunction.ReadOnlyContext):
    pass


class InternalKeyedBroadcastProcessFunctionOnTimerContext(_Keyed, fn.KeyedBroadcastProcessFunction.OnTimerContext):
    def __init__(self, operator: _BroadcastOperator, timers: TimerService) -> None:
        super().__init__(operator, timers)
        self._time_domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self._time_domain


class BroadcastSideTimerService(KeyedTimerService):
    """The timer service of the broadcast side of a keyed operator: as in PyFlink, a timer is
    registered for the key of the last keyed element; before the first there is none."""

    def _check_key(self) -> None:
        if self._operator.backend.current_key is None:
            raise RuntimeError("process_broadcast_element registered a timer before any element of the keyed "
                               "input: there is no current key to register it for")

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._check_key()
        super().register_processing_time_timer(timestamp)

    def register_event_time_timer(self, timestamp: int) -> None:
        self._check_key()
        super().register_event_time_timer(timestamp)


class _BroadcastOperator(TwoInputStreamOperator):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.operator_state_backend = OperatorStateBackend()
        self._broadcast_ended = False

    def open(self) -> None:
        super().open()
        for descriptor in self.spec.params["broadcast_state_descriptors"]:
            self.operator_state_backend.get_broadcast_state(descriptor)
        function = self.spec.function
        self._process_element = function.process_element
        self._process_broadcast_element = function.process_broadcast_element
        self.open_handover()

    def snapshot_state(self, snapshot: Any) -> None:
        """Keyed state and timers (keyed side) and every broadcast state, each as an operator
        state of mode ``broadcast`` named by its descriptor (entries as (key, value) pairs)."""
        super().snapshot_state(snapshot)
        for name, entries in self.operator_state_backend.snapshot().items():
            snapshot.add_list(name, list(entries.items()), mode="broadcast")

    def initialize_state(self, restored: Any) -> None:
        self.operator_state_backend.restore({name: dict(entries) for name, entries in restored.lists.items()})
        super().initialize_state(restored)

    def next_selection(self) -> int | None:
        """BATCH: the broadcast input until it ended, as Flink's batch broadcast operators."""
        if self.runtime.batch and not self._broadcast_ended:
            return BROADCAST_INPUT
        return None

    def end_input_of(self, index: int) -> None:
        if index == BROADCAST_INPUT:
            self._broadcast_ended = True

    def process_batch2(self, values: list, timestamps: list | None) -> None:
        self._call_each(self._process_broadcast_element, self._broadcast_ctx, values, timestamps)

    def _call_each(self, process: Any, ctx: _Context, values: list, timestamps: list | None) -> None:
        handover = self.handover
        out_values, out_ts, side = handover.new_results(timestamps)
        for i, value in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp = MIN_LONG if ts is None else ts
            self.emit_results(process(value, ctx), ts, out_values, out_ts, side)
        handover.end()


class CoBroadcastWithNonKeyedOperator(_BroadcastOperator):
    """``DataStream.connect(broadcast_stream).process(BroadcastProcessFunction)``."""

    def open(self) -> None:
        super().open()
        timers = NonKeyedTimerService(self)
        self._broadcast_ctx = InternalBroadcastProcessFunctionContext(self, timers)
        self._ctx = InternalBroadcastProcessFunctionReadOnlyContext(self, timers)

    def process_batch1(self, values: list, timestamps: list | None) -> None:
        self._call_each(self._process_element, self._ctx, values, timestamps)


class CoBroadcastWithKeyedOperator(_BroadcastOperator):
    """``KeyedStream.connect(broadcast_stream).process(KeyedBroadcastProcessFunction)``: keyed
    state and timers on the keyed side, ``on_timer`` when they fire."""

    def open(self) -> None:
        super().open()
        self.open_timer_service()
        keyed_timers = KeyedTimerService(self, self.timers)
        self._broadcast_ctx = InternalKeyedBroadcastProcessFunctionContext(
            self, BroadcastSideTimerService(self, self.timers))
        self._ctx = InternalKeyedBroadcastProcessFunctionReadOnlyContext(self, keyed_timers)
        self._timer_ctx = InternalKeyedBroadcastProcessFunctionOnTimerContext(self, keyed_timers)

    def process_batch1(self, values: list, timestamps: list | None) -> None:
        ctx, process, backend = self._ctx, self._process_element, self.backend
        keys = self.keys_of_inputs[0](values)
        state_keys = backend.state_keys(keys)
        handover = self.handover
        out_values, out_ts, side = handover.new_results(timestamps)
        for i, value in enumerate(values):
            key = keys[i]
            backend.current_key = state_keys[i]
            ts = timestamps[i] if timestamps is not None else None
            ctx._timestamp, ctx._key = MIN_LONG if ts is None else ts, key
            self.emit_results(process(value, ctx), ts, out_values, out_ts, side)
        handover.end()

    def on_timer(self, timestamp: int, key: Any, namespace: Any, domain: TimeDomain, out: TimerOutput) -> None:
        ctx = self._timer_ctx
        ctx._timestamp, ctx._key, ctx._time_domain = timestamp, key, domain
        self.emit_results(self.spec.function.on_timer(timestamp, ctx), timestamp, out.values, out.timestamps, out.side)
