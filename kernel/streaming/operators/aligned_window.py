"""The WindowOperator specialised for aligned event-time windows with the EventTimeTrigger.

Tumbling and sliding event-time windows under the default trigger are the common case, and
for them everything the generic operator asks the assigner, trigger and timer service per
element is arithmetic: a window is its start, its contents live under ``(key, start)``, and
its two timers (fire at ``max_timestamp``, clean up at ``max_timestamp + allowed_lateness``)
are registered once, when its contents are created. The behaviour is exactly the generic
operator's: same results, timestamps, firing order (timestamp, then registration order),
late-element handling, side output and counters.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.datastream.window import (
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    check_time_record,
)
from kernel.streaming.operators.window import WINDOW_CONTENTS, WindowOperator
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
        self.due: dict[int, list[tuple[Any, int]]] = {}  # timer time -> windows, in registration order
        self.due_times: list[int] = []  # heap of the keys of ``due``
        function = self.spec.function
        if self.contents_kind == "reduce":
            self._reduce = getattr(function, "reduce", function)
        elif self.contents_kind == "aggregate":
            self._create, self._add = function.create_accumulator, function.add

    # -- elements -----------------------------------------------------------------------------

    def process_batch(self, values, timestamps):
        if self.size == self.slide and self.contents_kind == "reduce" and self.timers.current_watermark == MIN_LONG \
                and timestamps and None not in timestamps:
            self._reduce_before_watermarks(values, timestamps)
            return
        out_values: list = []
        out_ts: list = []
        side: dict = {}
        late_values: list = []
        late_ts: list = []
        select, windows, watermark = self.key_selector, self.windows, self.timers.current_watermark
        size, slide, offset, lateness = self.size, self.slide, self.offset, self.allowed_lateness
        kind = self.contents_kind
        reduce = self._reduce if kind == "reduce" else None
        get = windows.get
        for value, ts in zip(values, timestamps or [None] * len(values)):
            if ts is None:
                check_time_record(ts, self.assigner)
            key = select(value)
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

    def _reduce_before_watermarks(self, values: list, timestamps: list) -> None:
        """Reducing into tumbling windows before any watermark (all of BATCH execution):
        nothing is late and nothing fires yet."""
        select, windows, reduce = self.key_selector, self.windows, self._reduce
        size, offset, lateness = self.size, self.offset, self.allowed_lateness
        get = windows.get
        created = []
        for value, ts in zip(values, timestamps):
            slot = (select(value), ts - (ts - offset + size) % size)
            contents = get(slot)
            if contents is None:
                windows[slot] = value
                created.append(slot)
            else:
                windows[slot] = reduce(contents, value)
        register = self._register
        for slot in created:  # timers in creation order, as the element-wise path registers them
            last = slot[1] + size - 1
            cleanup = last + lateness
            register(last, slot)
            if cleanup != last and cleanup < MAX_LONG:
                register(cleanup, slot)

    def _register(self, time: int, slot: tuple[Any, int]) -> None:
        slots = self.due.get(time)
        if slots is None:
            self.due[time] = [slot]
            heapq.heappush(self.due_times, time)
        else:
            slots.append(slot)

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, snapshot: OperatorSnapshot) -> None:
        """As the generic operator's state: contents under (key, TimeWindow), their timers."""
        super().snapshot_state(snapshot)
        size = self.size
        windows: dict[int, TimeWindow] = {}  # one object per window: pickled once, referenced after

        def window(start: int) -> TimeWindow:
            found = windows.get(start)
            if found is None:
                found = windows[start] = TimeWindow(start, start + size)
            return found

        snapshot.add_keyed(WINDOW_CONTENTS, CONTENTS_KIND[self.contents_kind],
                           [(key, window(start), contents) for (key, start), contents in self.windows.items()])
        due, order = self.due, 0
        entries = []
        for time in sorted(due):
            for key, start in due[time]:
                entries.append((key, window(start), (time, order)))
                order += 1
        snapshot.add_keyed(EVENT_TIMERS, "timers", entries)

    def initialize_state(self, restored: RestoredOperatorState) -> None:
        for key, window, contents in restored.pop_keyed(WINDOW_CONTENTS):
            self.windows[(key, window.start)] = contents
        for key, window, (time, _) in sorted(restored.pop_keyed(EVENT_TIMERS), key=lambda entry: entry[2]):
            self._register(time, (key, window.start))
        super().initialize_state(restored)

    # -- firing -------------------------------------------------------------------------------

    def process_watermark(self, timestamp: int) -> None:
        self.current_watermark = timestamp
        self.timers.current_watermark = timestamp
        due, due_times = self.due, self.due_times
        if due_times and due_times[0] <= timestamp:
            out_values: list = []
            out_ts: list = []
            side: dict = {}
            fired = 0
            size, lateness, windows = self.size, self.allowed_lateness, self.windows
            fire, clearing = self._fire, self.clearing_function
            while due_times and due_times[0] <= timestamp:
                time = heapq.heappop(due_times)
                for slot in due.pop(time):
                    fired += 1
                    last = slot[1] + size - 1
                    if time == last:
                        fire(slot, out_values, out_ts, side)
                    if time == last + lateness or time == MAX_LONG:
                        if clearing is None:
                            del windows[slot]
                        else:
                            self._clean_up(slot)
            self.runtime.count("timers_fired", fired)
            self.flush_results(out_values, out_ts, side)
        self.output.emit_watermark(timestamp)

    def _fire(self, slot: tuple[Any, int], out_values: list, out_ts: list, side: dict) -> None:
        contents = self.windows.get(slot)
        if contents is None:
            return
        key, start = slot
        kind = self.contents_kind
        if kind == "aggregate":
            elements = [self.spec.function.get_result(contents)]
        elif kind == "list":
            elements = list(contents)
        else:
            elements = [contents]
        self.backend.current_key = key
        self.runtime.count("windows_fired")
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
