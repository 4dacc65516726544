"""Windows, window assigners and triggers (``pyflink.datastream.window``).

Assigners put an element into windows; triggers decide when a window's contents are
emitted. Sizes are ``Time`` (as PyFlink takes), ``Duration`` or plain milliseconds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Callable, Collection, Iterable

from kernel.common.time import Time, to_millis
from kernel.common.typeinfo import Types
from kernel.datastream.state import ReducingStateDescriptor, ValueStateDescriptor

MAX_LONG = (1 << 63) - 1
MIN_LONG = -(1 << 63)

__all__ = [
    "Window", "TimeWindow", "CountWindow", "GlobalWindow", "WindowAssigner", "MergingWindowAssigner",
    "TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows", "EventTimeSessionWindows", "ProcessingTimeSessionWindows",
    "DynamicEventTimeSessionWindows", "DynamicProcessingTimeSessionWindows", "SessionWindowTimeGapExtractor",
    "GlobalWindows", "CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "Trigger", "TriggerResult",
    "EventTimeTrigger", "ProcessingTimeTrigger", "ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger",
    "PurgingTrigger", "CountTrigger", "NeverTrigger", "Time",
]


# -------------------------------------------------------------------------------------------
# Windows
# -------------------------------------------------------------------------------------------


class Window(ABC):
    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(Window):
    """The interval ``[start, end)`` of event or processing time."""

    __slots__ = ("start", "end")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the window of ``timestamp`` (non-negative remainder: negative times work)."""
        return timestamp - (timestamp - offset + window_size) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: Any) -> None:
        """Merge overlapping (or touching) windows; ``callback.merge(to_merge, result)`` per merge."""
        ordered = sorted(windows)
        merged: list[tuple[TimeWindow, set[TimeWindow]]] = []
        current: tuple[TimeWindow, set[TimeWindow]] | None = None
        for window in ordered:
            if current is None:
                current = (window, {window})
            elif current[0].intersects(window):
                current = (current[0].cover(window), current[1] | {window})
            else:
                merged.append(current)
                current = (window, {window})
        if current is not None:
            merged.append(current)
        for result, sources in merged:
            if len(sources) > 1:
                callback.merge(sources, result)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeWindow) and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def __lt__(self, other: TimeWindow) -> bool:
        return (self.start, self.end) < (other.start, other.end)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_LONG

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountWindow) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("count", self.id))

    def __lt__(self, other: CountWindow) -> bool:
        return self.id < other.id

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    _instance: GlobalWindow | None = None

    @staticmethod
    def get() -> GlobalWindow:
        if GlobalWindow._instance is None:
            GlobalWindow._instance = GlobalWindow()
        return GlobalWindow._instance

    def max_timestamp(self) -> int:
        return MAX_LONG

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __lt__(self, other: GlobalWindow) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindow"


# -------------------------------------------------------------------------------------------
# Triggers
# -------------------------------------------------------------------------------------------


class TriggerResult(Enum):
    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


class Trigger(ABC):
    class TriggerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_metric_group(self) -> Any: ...

        @abstractmethod
        def get_current_watermark(self) -> int: ...

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None: ...

        @abstractmethod
        def get_partitioned_state(self, state_descriptor: Any) -> Any: ...

    class OnMergeContext(TriggerContext):
        @abstractmethod
        def merge_partitioned_state(self, state_descriptor: Any) -> None: ...

    @abstractmethod
    def on_element(self, element: Any, timestamp: int, window: Window, ctx: Trigger.TriggerContext) -> TriggerResult: ...

    @abstractmethod
    def on_processing_time(self, time: int, window: Window, ctx: Trigger.TriggerContext) -> TriggerResult: ...

    @abstractmethod
    def on_event_time(self, time: int, window: Window, ctx: Trigger.TriggerContext) -> TriggerResult: ...

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        raise RuntimeError("This trigger does not support merging.")

    @abstractmethod
    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None: ...


class EventTimeTrigger(Trigger):
    """Fires once the watermark passes the window's end."""

    @staticmethod
    def create() -> EventTimeTrigger:
        return EventTimeTrigger()

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window, ctx) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())

    def __repr__(self) -> str:
        return "EventTimeTrigger()"


class ProcessingTimeTrigger(Trigger):
    """Fires once processing time passes the window's end."""

    @staticmethod
    def create() -> ProcessingTimeTrigger:
        return ProcessingTimeTrigger()

    def on_element(self, element, timestamp, window, ctx):
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.FIRE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window, ctx) -> None:
        ctx.delete_processing_time_timer(window.max_timestamp())

    def __repr__(self) -> str:
        return "ProcessingTimeTrigger()"


def _min(a: int, b: int) -> int:
    return a if a <= b else b


class ContinuousEventTimeTrigger(Trigger):
    """Fires every ``interval`` of event time, and at the window's end."""

    def __init__(self, interval: int) -> None:
        self.interval = interval
        self.state_desc = ReducingStateDescriptor("fire-time", _min, Types.LONG())

    @staticmethod
    def of(interval: Time) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(to_millis(interval))

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is None:
            self._register_next(timestamp - timestamp % self.interval + self.interval, window, ctx)
        return TriggerResult.CONTINUE

    def _register_next(self, time: int, window, ctx) -> None:
        next_fire = _min(time, window.max_timestamp())
        ctx.get_partitioned_state(self.state_desc).add(next_fire)
        ctx.register_event_time_timer(next_fire)

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time + self.interval, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()
        if next_fire is not None:
            ctx.register_event_time_timer(next_fire)

    def clear(self, window, ctx) -> None:
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is not None:
            ctx.delete_event_time_timer(fire_time.get())
            fire_time.clear()

    def __repr__(self) -> str:
        return f"ContinuousEventTimeTrigger({self.interval})"


class ContinuousProcessingTimeTrigger(Trigger):
    """Fires every ``interval`` of processing time."""

    def __init__(self, interval: int) -> None:
        self.interval = interval
        self.state_desc = ReducingStateDescriptor("fire-time", _min, Types.LONG())

    @staticmethod
    def of(interval: Time) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(to_millis(interval))

    def on_element(self, element, timestamp, window, ctx):
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is None:
            now = ctx.get_current_processing_time()
            self._register_next(now - now % self.interval + self.interval, window, ctx)
        return TriggerResult.CONTINUE

    def _register_next(self, time: int, window, ctx) -> None:
        next_fire = _min(time, window.max_timestamp())
        ctx.get_partitioned_state(self.state_desc).add(next_fire)
        ctx.register_processing_time_timer(next_fire)

    def on_processing_time(self, time, window, ctx):
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() == time:
            fire_time.clear()
            self._register_next(time + self.interval, window, ctx)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()
        if next_fire is not None:
            ctx.register_processing_time_timer(next_fire)

    def clear(self, window, ctx) -> None:
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is not None:
            ctx.delete_processing_time_timer(fire_time.get())
            fire_time.clear()

    def __repr__(self) -> str:
        return f"ContinuousProcessingTimeTrigger({self.interval})"


class CountTrigger(Trigger):
    """Fires when the window holds ``window_size`` more elements."""

    def __init__(self, window_size: int) -> None:
        self.window_size = window_size
        self.count_state_desc = ReducingStateDescriptor("count", lambda a, b: a + b, Types.LONG())

    @staticmethod
    def of(window_size: int) -> CountTrigger:
        return CountTrigger(window_size)

    def on_element(self, element, timestamp, window, ctx):
        count = ctx.get_partitioned_state(self.count_state_desc)
        count.add(1)
        if count.get() >= self.window_size:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(self.count_state_desc)

    def clear(self, window, ctx) -> None:
        ctx.get_partitioned_state(self.count_state_desc).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self.window_size})"


class PurgingTrigger(Trigger):
    """Turns every FIRE of the nested trigger into FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger) -> None:
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> PurgingTrigger:
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element, timestamp, window, ctx):
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_processing_time(self, time, window, ctx):
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def on_event_time(self, time, window, ctx):
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def can_merge(self) -> bool:
        return self.nested_trigger.can_merge()

    def on_merge(self, window, ctx) -> None:
        self.nested_trigger.on_merge(window, ctx)

    def clear(self, window, ctx) -> None:
        self.nested_trigger.clear(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"


class NeverTrigger(Trigger):
    """The default trigger of GlobalWindows: never fires."""

    def on_element(self, element, timestamp, window, ctx):
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        pass

    def clear(self, window, ctx) -> None:
        pass

    def __repr__(self) -> str:
        return "NeverTrigger()"


# -------------------------------------------------------------------------------------------
# Assigners
# -------------------------------------------------------------------------------------------


class WindowAssigner(ABC):
    class WindowAssignerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

        @abstractmethod
        def get_runtime_context(self) -> Any: ...

    def open(self, runtime_context: Any) -> None:
        """Called once per subtask before the first element (count assigners create state)."""

    @abstractmethod
    def assign_windows(self, element: Any, timestamp: int, context: Any) -> Collection[Window]: ...

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger: ...

    @abstractmethod
    def is_event_time(self) -> bool: ...


class MergingWindowAssigner(WindowAssigner):
    @abstractmethod
    def merge_windows(self, windows: Iterable[Window], callback: Any) -> None: ...


def check_time_record(timestamp: int | None, assigner: WindowAssigner) -> None:
    if timestamp is None or timestamp == MIN_LONG:
        raise Exception(
            "Record has Java Long.MIN_VALUE timestamp (= no timestamp marker). Is the time characteristic "
            f"set to 'ProcessingTime', or did you forget to call 'assign_timestamps_and_watermarks(...)'? "
            f"({type(assigner).__name__} needs event time)"
        )


class TumblingEventTimeWindows(WindowAssigner):
    def __init__(self, size: int, offset: int) -> None:
        if abs(offset) >= size:
            raise Exception("TumblingEventTimeWindows parameters must satisfy abs(offset) < size")
        self._size = size
        self._offset = offset

    @staticmethod
    def of(size: Time, offset: Time | None = None) -> TumblingEventTimeWindows:
        return TumblingEventTimeWindows(to_millis(size), to_millis(offset) if offset is not None else 0)

    def assign_windows(self, element, timestamp, context):
        check_time_record(timestamp, self)
        start = TimeWindow.get_window_start_with_offset(timestamp, self._offset, self._size)
        return [TimeWindow(start, start + self._size)]

    def get_default_trigger(self, env=None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TumblingEventTimeWindows({self._size}, {self._offset})"


class TumblingProcessingTimeWindows(WindowAssigner):
    def __init__(self, size: int, offset: int) -> None:
        if abs(offset) >= size:
            raise Exception("TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size")
        self._size = size
        self._offset = offset

    @staticmethod
    def of(size: Time, offset: Time | None = None) -> TumblingProcessingTimeWindows:
        return TumblingProcessingTimeWindows(to_millis(size), to_millis(offset) if offset is not None else 0)

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        start = TimeWindow.get_window_start_with_offset(now, self._offset, self._size)
        return [TimeWindow(start, start + self._size)]

    def get_default_trigger(self, env=None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"TumblingProcessingTimeWindows({self._size}, {self._offset})"


def _sliding(timestamp: int, size: int, slide: int, offset: int) -> list[TimeWindow]:
    last_start = TimeWindow.get_window_start_with_offset(timestamp, offset, slide)
    return [TimeWindow(start, start + size) for start in range(last_start, timestamp - size, -slide)]


class SlidingEventTimeWindows(WindowAssigner):
    def __init__(self, size: int, slide: int, offset: int) -> None:
        if abs(offset) >= slide or size <= 0:
            raise Exception("SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0")
        self._size, self._slide, self._offset = size, slide, offset

    @staticmethod
    def of(size: Time, slide: Time, offset: Time | None = None) -> SlidingEventTimeWindows:
        return SlidingEventTimeWindows(to_millis(size), to_millis(slide), to_millis(offset) if offset is not None else 0)

    def assign_windows(self, element, timestamp, context):
        check_time_record(timestamp, self)
        return _sliding(timestamp, self._size, self._slide, self._offset)

    def get_default_trigger(self, env=None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SlidingEventTimeWindows({self._size}, {self._slide}, {self._offset})"


class SlidingProcessingTimeWindows(WindowAssigner):
    def __init__(self, size: int, slide: int, offset: int) -> None:
        if abs(offset) >= slide or size <= 0:
            raise Exception("SlidingProcessingTimeWindows parameters must satisfy abs(offset) < slide and size > 0")
        self._size, self._slide, self._offset = size, slide, offset

    @staticmethod
    def of(size: Time, slide: Time, offset: Time | None = None) -> SlidingProcessingTimeWindows:
        return SlidingProcessingTimeWindows(
            to_millis(size), to_millis(slide), to_millis(offset) if offset is not None else 0
        )

    def assign_windows(self, element, timestamp, context):
        return _sliding(context.get_current_processing_time(), self._size, self._slide, self._offset)

    def get_default_trigger(self, env=None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"SlidingProcessingTimeWindows({self._size}, {self._slide}, {self._offset})"


class SessionWindowTimeGapExtractor(ABC):
    @abstractmethod
    def extract(self, element: Any) -> int:
        """The session gap (ms) after ``element``."""


def _gap_extractor(extractor: SessionWindowTimeGapExtractor | Callable[[Any], int]) -> Callable[[Any], int]:
    if isinstance(extractor, SessionWindowTimeGapExtractor):
        return extractor.extract
    if callable(extractor):
        return extractor
    raise TypeError("the session gap extractor must be a SessionWindowTimeGapExtractor or a callable")


class _SessionWindows(MergingWindowAssigner):
    def merge_windows(self, windows, callback) -> None:
        TimeWindow.merge_windows(windows, callback)


class EventTimeSessionWindows(_SessionWindows):
    def __init__(self, session_gap: int) -> None:
        if session_gap <= 0:
            raise Exception("EventTimeSessionWindows parameters must satisfy 0 < size")
        self._session_gap = session_gap

    @staticmethod
    def with_gap(size: Time) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(to_millis(size))

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element, timestamp, context):
        check_time_record(timestamp, self)
        return [TimeWindow(timestamp, timestamp + self._session_gap)]

    def get_default_trigger(self, env=None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"EventTimeSessionWindows({self._session_gap})"


class DynamicEventTimeSessionWindows(_SessionWindows):
    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        self._extract = _gap_extractor(session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element, timestamp, context):
        check_time_record(timestamp, self)
        gap = self._extract(element)
        if gap <= 0:
            raise Exception("Dynamic session time gap must satisfy 0 < gap")
        return [TimeWindow(timestamp, timestamp + gap)]

    def get_default_trigger(self, env=None) -> Trigger:
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "DynamicEventTimeSessionWindows()"


class ProcessingTimeSessionWindows(_SessionWindows):
    def __init__(self, session_gap: int) -> None:
        if session_gap <= 0:
            raise Exception("ProcessingTimeSessionWindows parameters must satisfy 0 < size")
        self._session_gap = session_gap

    @staticmethod
    def with_gap(size: Time) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(to_millis(size))

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self._session_gap)]

    def get_default_trigger(self, env=None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"ProcessingTimeSessionWindows({self._session_gap})"


class DynamicProcessingTimeSessionWindows(_SessionWindows):
    def __init__(self, session_window_time_gap_extractor: SessionWindowTimeGapExtractor) -> None:
        self._extract = _gap_extractor(session_window_time_gap_extractor)

    @staticmethod
    def with_dynamic_gap(extractor: SessionWindowTimeGapExtractor) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element, timestamp, context):
        now = context.get_current_processing_time()
        gap = self._extract(element)
        if gap <= 0:
            raise Exception("Dynamic session time gap must satisfy 0 < gap")
        return [TimeWindow(now, now + gap)]

    def get_default_trigger(self, env=None) -> Trigger:
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "DynamicProcessingTimeSessionWindows()"


class GlobalWindows(WindowAssigner):
    """One window per key holding everything; give it a trigger."""

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(self, element, timestamp, context):
        return [GlobalWindow.get()]

    def get_default_trigger(self, env=None) -> Trigger:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


class CountTumblingWindowAssigner(WindowAssigner):
    """Windows of ``window_size`` consecutive elements per key (PyFlink's count windows)."""

    def __init__(self, window_size: int) -> None:
        if window_size <= 0:
            raise Exception("Window size must be greater than 0")
        self._window_size = window_size
        self._counter_desc = ValueStateDescriptor("tumble-count-assigner", Types.LONG())
        self._count: Any = None

    @staticmethod
    def of(window_size: int) -> CountTumblingWindowAssigner:
        return CountTumblingWindowAssigner(window_size)

    def open(self, runtime_context: Any) -> None:
        self._count = runtime_context.get_state(self._counter_desc)

    def assign_windows(self, element, timestamp, context):
        count = self._count.value() or 0
        self._count.update(count + 1)
        return [CountWindow(count // self._window_size)]

    def get_default_trigger(self, env=None) -> Trigger:
        return CountTrigger(self._window_size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(WindowAssigner):
    """Windows of ``window_size`` elements every ``window_slide`` elements per key."""

    def __init__(self, window_size: int, window_slide: int) -> None:
        if window_size <= 0 or window_slide <= 0:
            raise Exception("Window size and slide must be greater than 0")
        self._window_size = window_size
        self._window_slide = window_slide
        self._counter_desc = ValueStateDescriptor("slide-count-assigner", Types.LONG())
        self._count: Any = None

    @staticmethod
    def of(window_size: int, window_slide: int) -> CountSlidingWindowAssigner:
        return CountSlidingWindowAssigner(window_size, window_slide)

    def open(self, runtime_context: Any) -> None:
        self._count = runtime_context.get_state(self._counter_desc)

    def assign_windows(self, element, timestamp, context):
        count = self._count.value() or 0
        self._count.update(count + 1)
        first = max(0, (count - self._window_size + self._window_slide) // self._window_slide)
        last = count // self._window_slide
        return [CountWindow(k) for k in range(first, last + 1) if k * self._window_slide <= count]

    def get_default_trigger(self, env=None) -> Trigger:
        return CountTrigger(self._window_size)

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"
