"""Windows, window assigners and triggers (``pyflink.datastream.window``).

Assigners put an element into windows; triggers decide when a window's contents are
emitted. Sizes are ``Time`` (as PyFlink takes), ``Duration`` or plain milliseconds. The
classes live in :mod:`kernel.datastream.windows`, :mod:`kernel.datastream.triggers` and
:mod:`kernel.datastream.window_assigners`; this is the module jobs import, as in PyFlink.
"""

from kernel.pyflink import unsupported
from kernel.common.time import Time
from kernel.datastream.triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from kernel.datastream.window_assigners import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    MergingWindowAssigner,
    ProcessingTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    check_time_record,
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

__all__ = [
    "Window", "TimeWindow", "CountWindow", "GlobalWindow", "WindowAssigner", "MergingWindowAssigner",
    "TumblingEventTimeWindows", "TumblingProcessingTimeWindows", "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows", "EventTimeSessionWindows", "ProcessingTimeSessionWindows",
    "DynamicEventTimeSessionWindows", "DynamicProcessingTimeSessionWindows", "SessionWindowTimeGapExtractor",
    "GlobalWindows", "CountTumblingWindowAssigner", "CountSlidingWindowAssigner", "Trigger", "TriggerResult",
    "EventTimeTrigger", "ProcessingTimeTrigger", "ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger",
    "PurgingTrigger", "CountTrigger", "NeverTrigger", "Time", "check_time_record", "TimeWindowSerializer",
    "CountWindowSerializer", "GlobalWindowSerializer",
]


__getattr__ = unsupported.module_getattr(__name__)
