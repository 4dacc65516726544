"""The WindowOperator, as Flink's: assign, accumulate, trigger, clean up, merge sessions.

Per element: for each window it is assigned to (merged into an existing session first, for
merging assigners) skip the window if it is late (``cleanup_time <= watermark``), else add the
element to the window's contents, ask the trigger, emit the contents on FIRE, clear them on
PURGE, and register the cleanup timer at ``max_timestamp + allowed_lateness``. An element
skipped for every window whose ``timestamp + allowed_lateness <= watermark`` is late: it goes
to the late-data side output, or is dropped and counted.

Timers: the trigger decides on FIRE/PURGE; at cleanup time the window's contents, trigger
state and ProcessWindowFunction state are cleared. Results carry the window's
``max_timestamp`` as timestamp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from kernel.clock import MAX_LONG
from kernel.jvm.keyidentity import user_key
from kernel.datastream import functions as fn
from kernel.datastream import state as st
from kernel.datastream.time_domain import TimeDomain
from kernel.datastream.window import MergingWindowAssigner, Trigger, Window, WindowAssigner
from kernel.runtime.streaming.subtask_copies import subtask_own
from kernel.runtime.streaming.operators.base import StreamOperator
from kernel.runtime.streaming.state import KeyedStateBackend

if TYPE_CHECKING:
    from kernel.runtime.streaming.timers import TimerOutput

WINDOW_CONTENTS = "window-contents"
MERGING_WINDOWS = "merging-window-set"


def cleanup_time(window: Window, assigner: WindowAssigner, allowed_lateness: int) -> int:
    if not assigner.is_event_time():
        return window.max_timestamp()
    end = window.max_timestamp() + allowed_lateness
    return end if end >= window.max_timestamp() and end <= MAX_LONG else MAX_LONG


class _AssignerContext(WindowAssigner.WindowAssignerContext):
    def __init__(self, operator: WindowOperator) -> None:
        self._operator = operator

    def get_current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()

    def get_runtime_context(self) -> Any:
        return self._operator.runtime_context


class _TriggerContext(Trigger.OnMergeContext):
    """The trigger's view: timers and partitioned state of ``window`` for the current key."""

    def __init__(self, operator: WindowOperator) -> None:
        self._operator = operator
        self.window: Any = None
        self.merged_windows: Iterable[Any] = ()

    def get_current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()

    def get_current_watermark(self) -> int:
        return self._operator.timers.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        self._operator.timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        self._operator.timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        self._operator.timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        self._operator.timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        return self._operator.backend.bound_state(state_descriptor, self.window)

    def get_metric_group(self) -> Any:
        return self._operator.runtime_context.get_metrics_group()

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        backend = self._operator.backend
        backend.bound_state(state_descriptor, self.window).merge(self.window, self.merged_windows)


class _WindowStateStore(fn.KeyedStateStore):
    def __init__(self, backend: KeyedStateBackend, namespace: Any) -> None:
        self._backend = backend
        self._namespace = namespace

    def _state(self, descriptor: Any) -> Any:
        return self._backend.bound_state(descriptor, self._namespace)

    get_state = get_list_state = get_map_state = get_reducing_state = get_aggregating_state = _state


class _ProcessWindowContext(fn.ProcessWindowFunction.Context, fn.ProcessAllWindowFunction.Context):
    def __init__(self, operator: WindowOperator) -> None:
        self._operator = operator
        self._window: Any = None

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self._operator.runtime.now_ms()

    def current_watermark(self) -> int:
        return self._operator.timers.current_watermark

    def window_state(self) -> fn.KeyedStateStore:
        return _WindowStateStore(self._operator.backend, self._window)

    def global_state(self) -> fn.KeyedStateStore:
        return _WindowStateStore(self._operator.backend, None)


class MergingWindowSet:
    """Per key: which state window holds the state of each (merged) window (Flink's class)."""

    def __init__(self, assigner: MergingWindowAssigner, mapping: dict) -> None:
        self.assigner = assigner
        self.mapping = mapping  # window -> state window

    def state_window(self, window: Any) -> Any:
        return self.mapping.get(window)

    def retire(self, window: Any) -> None:
        if self.mapping.pop(window, None) is None:
            raise RuntimeError(f"Window {window} is not in in-flight window set.")

    def add(self, new_window: Any, merge: Any) -> Any:
        """Add ``new_window``, merging it (and others) as the assigner says; the window it
        ended up in. As PyFlink's: of the windows merged together, the state window of the
        first the merge's set yields keeps the state (the others' are merged into it)."""
        windows = list(self.mapping) + [new_window]
        results: dict[Any, set] = {}

        class Callback(MergingWindowAssigner.MergeCallback):
            def merge(self, to_merge, merge_result):
                results[merge_result] = to_merge

        self.assigner.merge_windows(windows, Callback())
        result = new_window
        merged_new = False
        for merge_result, merged in results.items():
            if new_window in merged:
                merged.remove(new_window)
                merged_new = True
                result = merge_result
            target_state = self.mapping[next(iter(merged))]
            merged_states = [self.mapping.pop(w) for w in merged if w in self.mapping]
            self.mapping[merge_result] = target_state
            merged_states.remove(target_state)
            if not (merge_result in merged and len(merged) == 1):
                merge(merge_result, merged, target_state, merged_states)
        if not results or (result == new_window and not merged_new):
            self.mapping[result] = result
        return result


class WindowOperator(StreamOperator):
    """``KeyedStream.window(...)`` with reduce, aggregate, apply or process."""

    def user_functions(self) -> list[Any]:
        return [f for f in (self.spec.function, self.spec.params.get("window_function")) if f is not None]

    def open(self) -> None:
        super().open()
        self.open_timer_service()
        params = self.spec.params
        #: the subtask's own assigner and trigger, as Flink deserialises them per subtask (a
        #: count window assigner keeps its counter's state in what ``open`` stores on it)
        self.assigner: WindowAssigner = subtask_own(params["assigner"])
        self.trigger: Trigger = subtask_own(params["trigger"])
        self.allowed_lateness: int = params["allowed_lateness"]
        self.late_tag = params.get("late_data_tag")
        self.window_function = params.get("window_function")
        #: the process window function whose ``clear`` runs when a window is purged (None
        #: when there is none or it keeps the no-op ``clear``)
        self.clearing_function = self.window_function if isinstance(
            self.window_function, (fn.ProcessWindowFunction, fn.ProcessAllWindowFunction)) and type(
            self.window_function).clear not in (fn.ProcessWindowFunction.clear, fn.ProcessAllWindowFunction.clear
                                                ) else None
        self.contents_kind = params["contents"]
        self.merging = isinstance(self.assigner, MergingWindowAssigner)
        self.contents = self.backend.get_state(self._contents_descriptor())
        self.merging_sets = self.backend.table(MERGING_WINDOWS)
        self.trigger_context = _TriggerContext(self)
        self.process_context = _ProcessWindowContext(self)
        self.assigner_context = _AssignerContext(self)
        self._apply = self._window_function_caller()
        opener = getattr(self.assigner, "open", None)
        if opener is not None:
            opener(self.runtime_context)

    def _contents_descriptor(self) -> st.StateDescriptor:
        function = self.spec.function
        if self.contents_kind == "reduce":
            return st.ReducingStateDescriptor(WINDOW_CONTENTS, function)
        if self.contents_kind == "aggregate":
            return st.AggregatingStateDescriptor(WINDOW_CONTENTS, function)
        return st.ListStateDescriptor(WINDOW_CONTENTS)

    # -- elements -----------------------------------------------------------------------------

    def process_batch(self, values, timestamps):
        backend = self.backend
        keys = backend.state_keys(self.keys_of(values))
        out_values: list = []
        out_ts: list = []
        side: dict = {}
        late_values: list = []
        late_ts: list = []
        for i, value in enumerate(values):
            ts = timestamps[i] if timestamps is not None else None
            key = keys[i]
            backend.current_key = key
            if self._process_element(key, value, ts, out_values, out_ts, side):
                late_values.append(value)
                late_ts.append(ts)
        if late_values:
            self.handle_late(late_values, late_ts)
        self.flush_results(out_values, out_ts, side)

    def handle_late(self, values: list, timestamps: list) -> None:
        """Elements late for all their windows: to the late-data side output, else dropped."""
        if self.late_tag is not None and self.late_tag.tag_id in self.requested_side_outputs:
            self.output.collect_side(self.late_tag.tag_id, values, timestamps)
        else:
            self.runtime.count("late_records_dropped", len(values))

    def _process_element(self, key, value, ts, out_values, out_ts, side) -> bool:
        """Handle one element; True when it is late and skipped for every window."""
        windows = self.assigner.assign_windows(value, ts, self.assigner_context)
        skipped = True
        watermark = self.timers.current_watermark
        event_time = self.assigner.is_event_time()
        contents = self.contents
        if self.merging:
            merging_set = self._merging_set(key)
            for window in windows:
                actual = merging_set.add(window, lambda r, m, t, s: self._merge(r, m, t, s, key))
                if event_time and cleanup_time(actual, self.assigner, self.allowed_lateness) <= watermark:
                    merging_set.retire(actual)
                    continue
                skipped = False
                state_window = merging_set.state_window(actual)
                contents.namespace = state_window
                contents.add(value)
                self._on_element(key, value, ts, actual, state_window, out_values, out_ts, side)
            self._store_merging_set(key, merging_set)
        else:
            for window in windows:
                if event_time and cleanup_time(window, self.assigner, self.allowed_lateness) <= watermark:
                    continue
                skipped = False
                contents.namespace = window
                contents.add(value)
                self._on_element(key, value, ts, window, window, out_values, out_ts, side)
        return skipped and event_time and ts is not None and ts + self.allowed_lateness <= watermark

    def _on_element(self, key, value, ts, window, state_window, out_values, out_ts, side) -> None:
        context = self.trigger_context
        context.window = window
        result = self.trigger.on_element(value, ts, window, context)
        self.contents.namespace = state_window
        if result.is_fire():
            contents = self._contents()
            if contents is None:
                return  # as PyFlink's: nothing to fire, nor to purge, no cleanup timer
            self._emit(user_key(key), window, contents, out_values, out_ts, side)
        if result.is_purge():
            self.contents.namespace = state_window
            self.contents.clear()
        self._register_cleanup_timer(window)

    def _register_cleanup_timer(self, window: Any) -> None:
        self._cleanup_timer(window, register=True)

    def _delete_cleanup_timer(self, window: Any) -> None:
        self._cleanup_timer(window, register=False)

    def _cleanup_timer(self, window: Any, register: bool) -> None:
        cleanup = cleanup_time(window, self.assigner, self.allowed_lateness)
        if cleanup == MAX_LONG:
            return
        timers = self.timers
        if self.assigner.is_event_time():
            (timers.register_event_time_timer if register else timers.delete_event_time_timer)(window, cleanup)
        else:
            (timers.register_processing_time_timer if register else timers.delete_processing_time_timer)(window, cleanup)

    # -- sessions -----------------------------------------------------------------------------

    def _merging_set(self, key: Any) -> MergingWindowSet:
        return MergingWindowSet(self.assigner, dict(self.merging_sets.get((key, None), {})))  # type: ignore[arg-type]

    def _store_merging_set(self, key: Any, merging_set: MergingWindowSet) -> None:
        if merging_set.mapping:
            self.merging_sets[(key, None)] = merging_set.mapping
        else:
            self.merging_sets.pop((key, None), None)

    def _merge(self, merge_result, merged_windows, state_window, merged_state_windows, key) -> None:
        watermark = self.timers.current_watermark
        if self.assigner.is_event_time() and merge_result.max_timestamp() + self.allowed_lateness <= watermark:
            raise RuntimeError(
                "The end timestamp of an event-time window cannot become earlier than the current watermark "
                f"by merging. Current watermark: {watermark} window: {merge_result}"
            )
        context = self.trigger_context
        context.window = merge_result
        context.merged_windows = merged_windows
        self.trigger.on_merge(merge_result, context)
        for window in merged_windows:
            context.window = window
            self.trigger.clear(window, context)
            self._delete_cleanup_timer(window)
        self.contents.merge(state_window, merged_state_windows)

    # -- timers -------------------------------------------------------------------------------

    def on_timer(self, timestamp: int, key: Any, window: Any, domain: TimeDomain, out: TimerOutput) -> None:
        merging_set = None
        state_window = window
        if self.merging:  # the merging windows of the key the backend holds (KeyedStateBackend.select_key)
            state_key = self.backend.current_key
            merging_set = self._merging_set(state_key)
            state_window = merging_set.state_window(window)
            if state_window is None:
                return  # a timer of a window merged away: nothing left to do
        context = self.trigger_context
        context.window = window
        if domain is TimeDomain.EVENT_TIME:
            result = self.trigger.on_event_time(timestamp, window, context)
        else:
            result = self.trigger.on_processing_time(timestamp, window, context)
        self.contents.namespace = state_window
        if result.is_fire():
            contents = self._contents()
            if contents is not None:
                self._emit(key, window, contents, out.values, out.timestamps, out.side)
                self.contents.namespace = state_window
        if result.is_purge():
            self.contents.clear()
        event_time = self.assigner.is_event_time()
        if (domain is TimeDomain.EVENT_TIME) == event_time and \
                timestamp == cleanup_time(window, self.assigner, self.allowed_lateness):
            self._clear_all_state(window, state_window, merging_set)
        if merging_set is not None:
            self._store_merging_set(state_key, merging_set)

    def _clear_all_state(self, window, state_window, merging_set) -> None:
        self.contents.namespace = state_window
        self.contents.clear()
        context = self.trigger_context
        context.window = window
        self.trigger.clear(window, context)
        if self.clearing_function is not None:
            self.process_context._window = window
            self.clearing_function.clear(self.process_context)
        if merging_set is not None:
            merging_set.retire(window)

    # -- results ------------------------------------------------------------------------------

    def _window_function_caller(self) -> Any:
        """``(key, window, elements) -> results`` for the window function (or none)."""
        function, context = self.window_function, self.process_context
        if function is None:
            return lambda key, window, elements: elements
        if isinstance(function, fn.ProcessWindowFunction):
            def process(key, window, elements):
                context._window = window
                return function.process(key, context, elements)
            return process
        if isinstance(function, fn.ProcessAllWindowFunction):
            def process_all(key, window, elements):
                context._window = window
                return function.process(context, elements)
            return process_all
        if isinstance(function, fn.AllWindowFunction):
            return lambda key, window, elements: function.apply(window, elements)
        return function.apply

    def _contents(self) -> Any:
        """The current window's contents; None when it has none (a list state purged, or never
        added to, is empty: PyFlink and Flink fire no window then)."""
        contents = self.contents.get()
        return None if self.contents_kind == "list" and not contents else contents

    def _emit(self, key, window, contents, out_values, out_ts, side) -> None:
        """Apply the window function to a window's contents; ``key`` is the Python key (a
        timer's, or the held key of the record that fired the window)."""
        self.runtime.count("windows_fired")
        elements = contents if self.contents_kind == "list" else [contents]
        self.emit_results(self._apply(key, window, elements), window.max_timestamp(), out_values, out_ts, side)

