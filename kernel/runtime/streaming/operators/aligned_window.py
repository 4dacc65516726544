"""The WindowOperator specialised for aligned event-time windows with the EventTimeTrigger.

Tumbling and sliding event-time windows under the default trigger are the common case, and
for them everything the generic operator asks the assigner, trigger and timer service per
element is arithmetic: a window is its start, its contents live under ``(key, start)``, and
its two timers (fire at ``max_timestamp``, clean up at ``max_timestamp + allowed_lateness``)
are registered once, when its contents are created, in a queue of timers bucketed by time
(:class:`kernel.runtime.streaming.timer_queue.DistinctTimerQueue`, the namespace a window's start).
The behaviour is exactly the generic operator's: same results, timestamps, firing order
(windows due at one time in the order they were created), late-element handling, side output
and counters.
"""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any

from kernel.clock import MAX_LONG
from kernel.jvm.keyidentity import user_key
from kernel.datastream.window import (
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    check_time_record,
)
from kernel.runtime.streaming.operators.window import WINDOW_CONTENTS, WindowOperator
from kernel.runtime.streaming.timer_queue import DistinctTimerQueue, in_firing_order
from kernel.runtime.streaming.timers import EVENT_TIMERS

if TYPE_CHECKING:
    from kernel.runtime.checkpointing.snapshots import OperatorSnapshot, RestoredOperatorState
    from kernel.datastream.time_domain import TimeDomain
    from kernel.runtime.streaming.timers import TimerOutput

#: ``_emit_window``'s key when no timer fired the window: the key of the window's state
_STATE_KEY = object()
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
        #: the windows' timers: (time, key, window start), fired by the timer service
        self.window_timers = DistinctTimerQueue()
        self._windows_fired = 0  # windows fired by the timers firing at once
        function = self.spec.function
        if self.contents_kind == "reduce":
            self._reduce = getattr(function, "reduce", function)
        elif self.contents_kind == "aggregate":
            self._create, self._add = function.create_accumulator, function.add
        self._result = function.get_result if self.contents_kind == "aggregate" else None
        #: without a window function (or side outputs) a window's result is its contents
        self._direct = self.window_function is None and not self.requested_side_outputs
        #: its timers fire a round at once (``_fire_round``)
        self._fires_directly = self._direct and not self.allowed_lateness and self.clearing_function is None
        if self._fires_directly:
            self.on_timer = self._fire_and_clear  # type: ignore[method-assign]

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
        get = self._contents_getter()
        keys = self.backend.state_keys(self.keys_of(values))
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
                        self.window_timers.add(last, key, start)
                    if cleanup != last and cleanup != MAX_LONG:
                        self.window_timers.add(cleanup, key, start)
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
        keys = self.backend.state_keys(self.keys_of(values))
        starts = [ts - (ts + shift) % size for ts in timestamps]
        if min(starts) > fired_from >= skipped_from:
            self._into_open_windows(keys, starts, values)
            return
        kind = self.contents_kind
        reduce = self._reduce if kind == "reduce" else None
        add, create = (self._add, self._create) if kind == "aggregate" else (None, None)
        get, register = self._contents_getter(), self.window_timers.add
        fired: tuple[list, list, dict] | None = None
        late_values: list = []
        late_ts: list = []
        for key, value, ts, start in zip(keys, values, timestamps, starts):
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
                    register(last, key, start)
                if lateness and last + lateness < MAX_LONG:
                    register(last + lateness, key, start)
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

    def _into_open_windows(self, keys: list, starts: list, values: list) -> None:
        """``_tumbling`` for a batch whose every window is still open (no element late, no
        window fired yet), as loops over the batch: each element into its window's contents,
        then one timer per new window (its end; its cleanup time, with allowed lateness)."""
        windows, kind = self.windows, self.contents_kind
        get = self._contents_getter()
        created: list = []
        new = created.append
        if kind == "reduce":
            reduce = self._reduce
            for slot, value in zip(zip(keys, starts), values):
                contents = get(slot)
                if contents is None:
                    windows[slot] = value
                    new(slot)
                else:
                    windows[slot] = reduce(contents, value)
        elif kind == "aggregate":
            add, create = self._add, self._create
            for slot, value in zip(zip(keys, starts), values):
                contents = get(slot)
                if contents is None:
                    windows[slot] = add(value, create())
                    new(slot)
                else:
                    windows[slot] = add(value, contents)
        else:
            for slot, value in zip(zip(keys, starts), values):
                contents = get(slot)
                if contents is None:
                    windows[slot] = [value]
                    new(slot)
                else:
                    contents.append(value)
        if not created:
            return
        timers, size_1, lateness = self.window_timers, self.size - 1, self.allowed_lateness
        if lateness:
            for key, start in created:
                timers.add(start + size_1, key, start)
                if start + size_1 + lateness < MAX_LONG:
                    timers.add(start + size_1 + lateness, key, start)
            return
        buckets = timers.buckets  # one timer per window, at its end: the windows of a batch share a few ends
        for slot in created:
            bucket = buckets.get(slot[1] + size_1)
            if bucket is None:
                timers.add(slot[1] + size_1, *slot)
            else:
                bucket.append(slot)

    def _contents_getter(self) -> Any:
        """``windows.get``, or while a snapshot's view shares the contents, a ``get`` whose
        contents may be changed in place (:mod:`kernel.runtime.streaming.copy_on_write`)."""
        windows, backend = self.windows, self.backend
        view = backend.shared_views.get(id(windows))
        if view is None:
            return windows.get
        own, shared = backend.own, view.get

        def get(slot: tuple[Any, int]) -> Any:
            contents = windows.get(slot)
            if contents is not None and contents is shared(slot):
                return own(windows, slot, contents)
            return contents

        return get

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, snapshot: OperatorSnapshot) -> None:
        """As the generic operator's state: contents under (key, TimeWindow), their timers —
        from views taken now, sorted into key groups in the asynchronous part, one key-group
        lookup and one TimeWindow object (pickled once, referenced after) per entry at most."""
        super().snapshot_state(snapshot)
        if not self.windows and not self.window_timers.buckets:
            return
        contents, timers = self.backend.share(self.windows), self.window_timers.view()
        snapshot.defer(lambda into: self._add_views(into, contents, timers))

    def _add_views(self, snapshot: OperatorSnapshot, contents: dict, timers: list) -> None:
        size, group_of = self.size, snapshot.key_group_of
        windows: dict[int, TimeWindow] = {}

        def by_key_group(entries: Any) -> dict[int, list]:
            """(key, window start, value) entries as (key, TimeWindow, value) per key group."""
            grouped: dict[int, list] = {}
            for key, start, value in entries:
                window = windows.get(start)
                if window is None:
                    window = windows[start] = TimeWindow(start, start + size)
                key = user_key(key)
                group = group_of(key)
                found = grouped.get(group)
                if found is None:
                    grouped[group] = [(key, window, value)]
                else:
                    found.append((key, window, value))
            return grouped

        snapshot.add_keyed_groups(WINDOW_CONTENTS, CONTENTS_KIND[self.contents_kind], by_key_group(
            (key, start, value) for (key, start), value in contents.items()))
        snapshot.add_keyed_groups(EVENT_TIMERS, "timers", by_key_group(
            (key, start, (time, position)) for position, (time, key, start) in enumerate(in_firing_order(timers), 1)))

    def initialize_state(self, restored: RestoredOperatorState) -> None:
        restored_key = self.backend.restored_key
        for key, window, contents in restored.pop_keyed(WINDOW_CONTENTS):
            self.windows[(restored_key(key), window.start)] = contents
        for key, window, (time, _) in sorted(restored.pop_keyed(EVENT_TIMERS), key=lambda entry: entry[2][1]):
            self.window_timers.add(time, restored_key(key), window.start)
        super().initialize_state(restored)

    # -- firing -------------------------------------------------------------------------------

    def advance_timers(self, timestamp: int) -> None:
        """Fire and clean up the windows whose timers the watermark passed, in timer order."""
        self.current_watermark = timestamp
        self.timers.fire_event_time(self.window_timers, timestamp, self._fire_round if self._fires_directly else None)
        if self._windows_fired:
            self.runtime.count("windows_fired", self._windows_fired)
            self._windows_fired = 0

    def on_timer(self, timestamp: int, key: Any, start: Any, domain: TimeDomain, out: TimerOutput) -> None:
        """A window's timer: at its end it fires, at its cleanup time its contents go. The
        window is the one of the key the backend holds (a timer of True right after one of 1
        reads 1's window, as in PyFlink: ``KeyedStateBackend.select_key``); the window
        function gets the timer's key."""
        slot = (self.backend.current_key, start)
        last = start + self.size - 1
        windows = self.windows
        if timestamp == last:
            contents = self._contents_getter()(slot)
            if contents is not None:
                self._windows_fired += 1
                if self._direct:
                    out.values.append(contents if self._result is None else self._result(contents))
                    out.timestamps.append(last)
                else:
                    self._emit_window(slot, contents, out.values, out.timestamps, out.side, key)
        if timestamp == last + self.allowed_lateness or timestamp == MAX_LONG:
            if self.clearing_function is None:
                windows.pop(slot, None)
            else:
                self._clean_up(slot)

    def _fire_and_clear(self, timestamp: int, key: Any, start: Any, domain: TimeDomain, out: TimerOutput) -> None:
        """``on_timer`` without lateness, window function or side outputs: each timer fires its
        window (its contents the result) and clears it."""
        slot = (self.backend.current_key, start)
        contents = self.windows.pop(slot, None)
        if contents is not None:
            if self.backend.shared_views:
                contents = self.backend.own(self.windows, slot, contents, kept=False)
            self._windows_fired += 1
            out.values.append(contents if self._result is None else self._result(contents))
            out.timestamps.append(timestamp)

    def _fire_round(self, buckets: list, out: TimerOutput) -> int:
        """``_fire_and_clear`` for every timer of a round (its timers, registered once per
        window at its end, call no user code): loops over each time's windows. How many timers."""
        windows, values, timestamps = self.windows, out.values, out.timestamps
        pop, result = windows.pop, self._result
        before, timers = len(values), 0
        shared = self.backend.shared_views.get(id(windows))
        for timestamp, slots in buckets:
            timers += len(slots)
            if shared is None and result is None:
                fired = [contents for contents in map(pop, slots, repeat(None)) if contents is not None]
            else:
                fired = [contents if result is None else result(contents) for contents in (
                    self.backend.own(windows, slot, contents, kept=False) if shared is not None else contents
                    for slot, contents in zip(slots, map(pop, slots, repeat(None)))) if contents is not None]
            values.extend(fired)
            timestamps.extend(repeat(timestamp, len(fired)))
        self._windows_fired += len(values) - before
        return timers

    def _fire(self, slot: tuple[Any, int], out_values: list, out_ts: list, side: dict) -> None:
        contents = self._contents_getter()(slot)
        if contents is not None:
            self.runtime.count("windows_fired")
            self._emit_window(slot, contents, out_values, out_ts, side)

    def _emit_window(self, slot: tuple[Any, int], contents: Any, out_values: list, out_ts: list, side: dict,
                     timer_key: Any = _STATE_KEY) -> None:
        """Apply the window function to a window's contents; its key is the (Python) key of the
        timer that fired the window (``timer_key``), else the key of the window's state."""
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
        self.emit_results(self._apply(user_key(key) if timer_key is _STATE_KEY else timer_key, TimeWindow(start, end),
                                      elements), end - 1, out_values, out_ts, side)

    def _clean_up(self, slot: tuple[Any, int]) -> None:
        self.windows.pop(slot, None)
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
