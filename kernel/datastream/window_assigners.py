"""Window assigners: which windows an element belongs to, and their default triggers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Collection, Generic, Iterable, TypeVar

from kernel.clock import MIN_LONG
from kernel.common.serializer import TypeSerializer
from kernel.common.time import Time, to_millis
from kernel.common.typeinfo import Types
from kernel.datastream.state import ValueStateDescriptor
from kernel.datastream.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    Trigger,
)
from kernel.datastream.windows import (
    CountWindow,
    CountWindowSerializer,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
    Window,
)

T = TypeVar("T")
W = TypeVar("W")
W2 = TypeVar("W2")


class WindowAssigner(ABC, Generic[T, W]):
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
    def get_window_serializer(self) -> TypeSerializer[W]: ...

    @abstractmethod
    def is_event_time(self) -> bool: ...


class MergingWindowAssigner(WindowAssigner[T, W]):
    class MergeCallback(ABC, Generic[W2]):
        """Told by ``merge_windows`` which windows merge into which."""

        @abstractmethod
        def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None: ...

    @abstractmethod
    def merge_windows(self, windows: Iterable[W], callback: MergingWindowAssigner.MergeCallback[W]) -> None: ...


def check_time_record(timestamp: int | None, assigner: WindowAssigner) -> None:
    if timestamp is None or timestamp == MIN_LONG:
        raise Exception(
            "Record has Java Long.MIN_VALUE timestamp (= no timestamp marker). Is the time characteristic "
            f"set to 'ProcessingTime', or did you forget to call 'assign_timestamps_and_watermarks(...)'? "
            f"({type(assigner).__name__} needs event time)"
        )


class TumblingEventTimeWindows(WindowAssigner[T, TimeWindow]):
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

    def get_window_serializer(self) -> TypeSerializer[TimeWindow]:
        return TimeWindowSerializer()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"TumblingEventTimeWindows({self._size}, {self._offset})"


class TumblingProcessingTimeWindows(WindowAssigner[T, TimeWindow]):
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

    def get_window_serializer(self) -> TypeSerializer[TimeWindow]:
        return TimeWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"TumblingProcessingTimeWindows({self._size}, {self._offset})"


def _sliding(timestamp: int, size: int, slide: int, offset: int) -> list[TimeWindow]:
    last_start = TimeWindow.get_window_start_with_offset(timestamp, offset, slide)
    return [TimeWindow(start, start + size) for start in range(last_start, timestamp - size, -slide)]


class SlidingEventTimeWindows(WindowAssigner[T, TimeWindow]):
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

    def get_window_serializer(self) -> TypeSerializer[TimeWindow]:
        return TimeWindowSerializer()

    def is_event_time(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"SlidingEventTimeWindows({self._size}, {self._slide}, {self._offset})"


class SlidingProcessingTimeWindows(WindowAssigner[T, TimeWindow]):
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

    def get_window_serializer(self) -> TypeSerializer[TimeWindow]:
        return TimeWindowSerializer()

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


class _SessionWindows(MergingWindowAssigner[T, TimeWindow]):
    def merge_windows(self, windows, callback) -> None:
        TimeWindow.merge_windows(windows, callback)

    def get_window_serializer(self) -> TypeSerializer[TimeWindow]:
        return TimeWindowSerializer()


class EventTimeSessionWindows(_SessionWindows[T]):
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


class DynamicEventTimeSessionWindows(_SessionWindows[T]):
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


class ProcessingTimeSessionWindows(_SessionWindows[T]):
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


class DynamicProcessingTimeSessionWindows(_SessionWindows[T]):
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


class GlobalWindows(WindowAssigner[T, GlobalWindow]):
    """One window per key holding everything; give it a trigger."""

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(self, element, timestamp, context):
        return [GlobalWindow.get()]

    def get_default_trigger(self, env=None) -> Trigger:
        return NeverTrigger()

    def get_window_serializer(self) -> TypeSerializer[GlobalWindow]:
        return GlobalWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"


class CountTumblingWindowAssigner(WindowAssigner[T, CountWindow]):
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

    def get_window_serializer(self) -> TypeSerializer[CountWindow]:
        return CountWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(WindowAssigner[T, CountWindow]):
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

    def get_window_serializer(self) -> TypeSerializer[CountWindow]:
        return CountWindowSerializer()

    def is_event_time(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"
