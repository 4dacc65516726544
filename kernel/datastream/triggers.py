"""Triggers: when a window's contents are emitted (and purged)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kernel.pyflink import unsupported
from kernel.common.time import Time, to_millis
from kernel.common.typeinfo import Types
from kernel.datastream.state import ReducingStateDescriptor
from kernel.datastream.windows import CountWindow, GlobalWindow, TimeWindow, Window

if TYPE_CHECKING:
    from kernel.metrics import MetricGroup

T = TypeVar("T")
W = TypeVar("W")


class TriggerResult(Enum):
    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        return self.value[0]

    def is_purge(self) -> bool:
        return self.value[1]


@unsupported.members("pyflink.datastream.window:Trigger")
class Trigger(ABC, Generic[T, W]):
    class TriggerContext(ABC):
        @abstractmethod
        def get_current_processing_time(self) -> int: ...

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

        @abstractmethod
        def get_metric_group(self) -> MetricGroup:
            """The window operator's metric group, as its functions' runtime context gives it."""

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


class EventTimeTrigger(Trigger[T, TimeWindow]):
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


class ProcessingTimeTrigger(Trigger[T, TimeWindow]):
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


class _ContinuousTrigger(Trigger[T, TimeWindow]):
    """Fires every ``interval`` of its time domain (the earliest next firing is kept in
    reducing state, so merged windows keep the earlier one)."""

    def __init__(self, interval: int) -> None:
        self.interval = interval
        self.state_desc = ReducingStateDescriptor("fire-time", _min, Types.LONG())

    def _register_timer(self, ctx: Trigger.TriggerContext, time: int) -> None:
        raise NotImplementedError

    def _delete_timer(self, ctx: Trigger.TriggerContext, time: int) -> None:
        raise NotImplementedError

    def register_next_fire_timestamp(self, time: int, window, ctx, fire_timestamp_state) -> None:
        """The next firing one interval after ``time`` (at the latest at the window's end)."""
        next_fire = _min(time + self.interval, window.max_timestamp())
        fire_timestamp_state.add(next_fire)
        self._register_timer(ctx, next_fire)

    def _fire_on_interval(self, time: int, window, ctx) -> TriggerResult:
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() == time:
            fire_time.clear()
            self.register_next_fire_timestamp(time, window, ctx, fire_time)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return True

    def on_merge(self, window, ctx) -> None:
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()
        if next_fire is not None:
            self._register_timer(ctx, next_fire)

    def clear(self, window, ctx) -> None:
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is not None:
            self._delete_timer(ctx, fire_time.get())
            fire_time.clear()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.interval})"


class ContinuousEventTimeTrigger(_ContinuousTrigger[T]):
    """Fires every ``interval`` of event time, and at the window's end."""

    @staticmethod
    def of(interval: Time) -> ContinuousEventTimeTrigger:
        return ContinuousEventTimeTrigger(to_millis(interval))

    def _register_timer(self, ctx, time):
        ctx.register_event_time_timer(time)

    def _delete_timer(self, ctx, time):
        ctx.delete_event_time_timer(time)

    def on_element(self, element, timestamp, window, ctx):
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is None:
            self.register_next_fire_timestamp(timestamp - timestamp % self.interval, window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        return self._fire_on_interval(time, window, ctx)


class ContinuousProcessingTimeTrigger(_ContinuousTrigger[T]):
    """Fires every ``interval`` of processing time."""

    @staticmethod
    def of(interval: Time) -> ContinuousProcessingTimeTrigger:
        return ContinuousProcessingTimeTrigger(to_millis(interval))

    def _register_timer(self, ctx, time):
        ctx.register_processing_time_timer(time)

    def _delete_timer(self, ctx, time):
        ctx.delete_processing_time_timer(time)

    def on_element(self, element, timestamp, window, ctx):
        fire_time = ctx.get_partitioned_state(self.state_desc)
        if fire_time.get() is None:
            now = ctx.get_current_processing_time()
            self.register_next_fire_timestamp(now - now % self.interval, window, ctx, fire_time)
        return TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx):
        return self._fire_on_interval(time, window, ctx)

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE


class CountTrigger(Trigger[T, CountWindow]):
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


class PurgingTrigger(Trigger[T, Window]):
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


class NeverTrigger(Trigger[T, GlobalWindow]):
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
