"""The WindowOperator specialised for aligned event-time windows with the EventTimeTrigger.

Tumbling and sliding event-time windows under the default trigger are the common case, and
for them everything the generic operator asks the assigner, trigger and timer service per
element is arithmetic: a window is its start, its contents live under ``(key, start)``, and
its two timers (fire at ``max_timestamp``, clean up at ``max_timestamp + allowed_lateness``)
are registered once, when its contents are created, in the timer heap Flink keeps
(:mod:`kernel.streaming.timer_heap`, the namespace a window's start). The behaviour is exactly
the generic operator's: same results, timestamps, firing order (the heap's), late-element
handling, side output and counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.clock import MAX_LONG
from kernel.datastream.window import (
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    check_time_record,
)
from kernel.streaming.operators.window import WINDOW_CONTENTS, WindowOperator
from kernel.streaming.timer_heap import pop, push
from kernel.streaming.timers import EVENT_TIMERS

if TYPE_CHECKING:
    from kernel.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState

#: kind of the window contents' state in a checkpoint, as the generic operator's
CONTENTS_KIND = {"list": "list", "reduce": "reducing", "aggregate": "aggregating"}


def is_aligned_event_time(params: dict) -> bool:
    """Whether a window operator's assigner and trigger allow the specialised operator."""
    return type(params["assigner"]) in (TumblingEventTimeWindows, SlidingEventTimeWindows) \
        and type(params["trigger"]) is EventTimeTrigger


class AlignedWindowOperator(WindowOperator):
    def open(self) -> None:
        super().open()
        assigner = self.assigner
        self.size = assigner._size
        self.slide = getattr(assigner, "_slide", assigner._size)
        self.offset = assigner._offset
        self.windows: dict[tuple[Any, int], Any] = {}  # (key, window start) -> contents
        self.due: list = [None]  # the windows' timers, a timer heap of (time, key, window start)
        function = self.spec.function
        if self.contents_kind == "reduce":
            self._reduce = getattr(function, "reduce", function)
        elif self.contents_kind == "aggregate":
            self._create, self._add = function.create_accumulator, function.add

    # -- elements -----------------------------------------------------------------------------

    def process_batch(self, values, timestamps):
        if self.size == self.slide and timestamps and None not in timestamps:
            self._tumbling(values, timestamps)
            return
        out_values: list = []
        out_ts: list = []
        side: dict = {}
        late_values: list = []
        late_ts: list = []
        windows, watermark = self.windows, self.timers.current_watermark
        size, slide, offset, lateness = self.size, self.slide, self.offset, self.allowed_lateness
        kind = self.contents_kind
        reduce = self._reduce if kind == "reduce" else None
        get = windows.get
        keys = self.keys_of(values)
        for key, value, ts in zip(keys, values, timestamps or [None] * len(values)):
            if ts is None:
                check_time_record(ts, self.assigner)
            start = ts - (ts - offset + slide) % slide
            skipped = True
            while start > ts - size:
                last = start + size - 1
                cleanup = last + lateness
                if cleanup > MAX_LONG:
                    cleanup = MAX_LONG
                if cleanup <= watermark:
                    start -= slide
                    continue
                skipped = False
                slot = (key, start)
                contents = get(slot)
                if contents is None:
                    if last > watermark:
                        self._register(last, slot)
                    if cleanup != last and cleanup != MAX_LONG:
                        self._register(cleanup, slot)
                if reduce is not None:
                    windows[slot] = value if contents is None else reduce(contents, value)
                elif kind == "aggregate":
                    windows[slot] = self._add(value, self._create() if contents is None else contents)
                elif contents is None:
                    windows[slot] = [value]
                else:
                    contents.append(value)
                if last <= watermark:
                    self._fire(slot, out_values, out_ts, side)
                start -= slide
            if skipped and ts + lateness <= watermark:
                late_values.append(value)
                late_ts.append(ts)
        if late_values:
            self.handle_late(late_values, late_ts)
        self.flush_results(out_values, out_ts, side)

    def _tumbling(self, values: list, timestamps: list) -> None:
        """``process_batch`` for tumbling windows: each element has exactly one window, so the
        loop above is straight-line code (same contents, timers in the same order, same late
        elements and firings). A window is skipped when its cleanup time (``last + lateness``,
        at most MAX) has passed the watermark: when ``last <= watermark - lateness``, or always
        once the watermark is MAX; it has fired when ``last <= watermark``. Both compare its
        start (``last - size + 1``)."""
        windows, watermark = self.windows, self.timers.current_watermark
        size, lateness = self.size, self.allowed_lateness
        shift, size_1 = size - self.offset, size - 1
        skipped_from = (watermark - lateness if watermark < MAX_LONG else MAX_LONG + size) - size_1
        fired_from = watermark - size_1 if lateness > 0 else skipped_from  # lateness 0: no window takes late elements
        kind = self.contents_kind
        reduce = self._reduce if kind == "reduce" else None
        add, create = (self._add, self._create) if kind == "aggregate" else (None, None)
        get, due = windows.get, self.due
        fired: tuple[list, list, dict] | None = None
        late_values: list = []
        late_ts: list = []
        for key, value, ts in zip(self.keys_of(values), values, timestamps):
            start = ts - (ts + shift) % size
            if start <= skipped_from:
                if ts + lateness <= watermark:
                    late_values.append(value)
                    late_ts.append(ts)
                continue
            slot = (key, start)
            contents = get(slot)
            if contents is None:
                last = start + size_1
                if last > watermark:
                    push(due, (last, key, start))
                if lateness and last + lateness < MAX_LONG:
                    push(due, (last + lateness, key, start))
                windows[slot] = value if reduce is not None else add(value, create()) if add is not None else [value]
            elif reduce is not None:
                windows[slot] = reduce(contents, value)
            elif add is not None:
                windows[slot] = add(value, contents)
            else:
                contents.append(value)
            if start <= fired_from:
                if fired is None:
                    fired = ([], [], {})
                self._fire(slot, *fired)
        if late_values:
            self.handle_late(late_values, late_ts)
        if fired is not None:
            self.flush_results(*fired)

    def _register(self, time: int, slot: tuple[Any, int]) -> None:
        push(self.due, (time, *slot))

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, snapshot: OperatorSnapshot) -> None:
        """As the generic operator's state: contents under (key, TimeWindow), their timers —
        sorted into key groups here, one key-group lookup and one TimeWindow object (pickled
        once, referenced after) per entry at most."""
        super().snapshot_state(snapshot)
        size, group_of = self.size, snapshot.key_group_of
        windows: dict[int, TimeWindow] = {}

        def by_key_group(entries: Any) -> dict[int, list]:
            """(key, window start, value) entries as (key, TimeWindow, value) per key group."""
            grouped: dict[int, list] = {}
            for key, start, value in entries:
                window = windows.get(start)
                if window is None:
                    window = windows[start] = TimeWindow(start, start + size)
                group = group_of(key)
                found = grouped.get(group)
                if found is None:
                    grouped[group] = [(key, window, value)]
                else:
                    found.append((key, window, value))
            return grouped

        snapshot.add_keyed_groups(WINDOW_CONTENTS, CONTENTS_KIND[self.contents_kind], by_key_group(
            (key, start, value) for (key, start), value in self.windows.items()))
        snapshot.add_keyed_groups(EVENT_TIMERS, "timers", by_key_group(
            (key, start, (time, position)) for position, (time, key, start) in enumerate(self.due[1:], 1)))

    def initialize_state(self, restored: RestoredOperatorState) -> None:
        for key, window, contents in restored.pop_keyed(WINDOW_CONTENTS):
            self.windows[(key, window.start)] = contents
        for key, window, (time, _) in sorted(restored.pop_keyed(EVENT_TIMERS), key=lambda entry: entry[2][1]):
            push(self.due, (time, key, window.start))
        super().initialize_state(restored)

    # -- firing -------------------------------------------------------------------------------

    def advance_timers(self, timestamp: int) -> None:
        self.current_watermark = timestamp
        self.timers.current_watermark = timestamp
        heap = self.due
        if len(heap) > 1 and heap[1][0] <= timestamp:
            self._fire_due(timestamp)

    def _fire_due(self, timestamp: int) -> None:
        """Fire and clean up the windows whose timers the watermark passed, in timer order.
        Without a window function (or side outputs) a window's result is its contents."""
        out_values: list = []
        out_ts: list = []
        side: dict = {}
        heap, windows, backend = self.due, self.windows, self.backend
        size, lateness, clearing = self.size, self.allowed_lateness, self.clearing_function
        direct = self.window_function is None and not self.requested_side_outputs
        result = self.spec.function.get_result if self.contents_kind == "aggregate" else None
        get, emit = windows.get, self._emit_window
        timers = fired = 0
        handover = self.handover
        handover.results(out_values, out_ts, side)
        try:
            if direct and not lateness and clearing is None:  # each timer fires its window and clears it
                take, append, append_ts = windows.pop, out_values.append, out_ts.append
                while len(heap) > 1 and heap[1][0] <= timestamp:
                    time, key, start = pop(heap)
                    timers += 1
                    contents = take((key, start), None)
                    if contents is not None:
                        fired += 1
                        backend.current_key = key
                        append(contents if result is None else result(contents))
                        append_ts(time)
            else:
                while len(heap) > 1 and heap[1][0] <= timestamp:
                    time, key, start = pop(heap)
                    slot = (key, start)
                    timers += 1
                    last = start + size - 1
                    if time == last:
                        contents = get(slot)
                        if contents is not None:
                            fired += 1
                            if direct:
                                backend.current_key = key
                                out_values.append(contents if result is None else result(contents))
                                out_ts.append(last)
                            else:
                                emit(slot, contents, out_values, out_ts, side)
                    if time == last + lateness or time == MAX_LONG:
                        if clearing is None:
                            del windows[slot]
                        else:
                            self._clean_up(slot)
        finally:
            runtime = self.runtime
            if fired:
                runtime.count("windows_fired", fired)
            runtime.count("timers_fired", timers)
        handover.end()

    def _fire(self, slot: tuple[Any, int], out_values: list, out_ts: list, side: dict) -> None:
        contents = self.windows.get(slot)
        if contents is not None:
            self.runtime.count("windows_fired")
            self._emit_window(slot, contents, out_values, out_ts, side)

    def _emit_window(self, slot: tuple[Any, int], contents: Any, out_values: list, out_ts: list, side: dict) -> None:
        key, start = slot
        kind = self.contents_kind
        if kind == "aggregate":
            elements = [self.spec.function.get_result(contents)]
        elif kind == "list":
            elements = list(contents)
        else:
            elements = [contents]
        self.backend.current_key = key
        end = start + self.size
        self.emit_results(self._apply(key, TimeWindow(start, end), elements), end - 1, out_values, out_ts, side)

    def _clean_up(self, slot: tuple[Any, int]) -> None:
        del self.windows[slot]
        if self.clearing_function is not None:
            key, start = slot
            self.backend.current_key = key
            self.process_context._window = TimeWindow(start, start + self.size)
            self.clearing_function.clear(self.process_context)


def window_operator(spec: Any, node: Any, runtime: Any) -> WindowOperator:
    """The operator of a window spec: this specialisation when it applies, else the generic one."""
    if is_aligned_event_time(spec.params):
        return AlignedWindowOperator(spec, node, runtime)
    return WindowOperator(spec, node, runtime)
