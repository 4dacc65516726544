"""Task metrics as Flink's TaskIOMetricGroup measures them, on the kernel clock; and where
back pressure is measured.

A :class:`TimerGauge` accumulates time between ``mark_start`` and ``mark_end``; sampling takes
what accumulated since the last sample (counting a running measurement up to now) and
restarts the window. Idle and back-pressured time are TimerGauges that run while the task's
default action is suspended for want of input (idle) or of room in an output partition
(back pressured: :meth:`TaskIOMetrics.output_available`), paused while mails run; busy time
is the rest of the interval (NaN for legacy sources, as in Flink), so idle + busy + back
pressured is the whole interval. A task whose async operator has used up its capacity is back
pressured too (:mod:`plugins.local.tasks.async_io`). Back pressure here is Flink's soft back pressure; a task is
never hard back-pressured (blocked requesting a buffer mid-record): the record writer writes
a batch it started whole (:mod:`plugins.local.network.partition`). Records are counted per
batch; late records dropped, timers fired and windows fired are counted per interval too. The
task's user metrics (:class:`kernel.metrics.groups.TaskMetricGroup`) are sampled at the same
instants.
The TaskExecutor samples from its own thread while the task runs in another (realtime): a
TimerGauge's marks and samples are atomic (as Flink's synchronized TimerGauge), so a task
blocked in user code shows as busy.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS, NS_PER_S
from kernel.metrics.groups import TaskMetricGroup
from kernel.lifecycle.pythonenv.options import PythonOptions

if TYPE_CHECKING:
    from kernel.config import Config
    from kernel.contracts.mailbox import MailboxProcessor
    from plugins.local.network.partition import ResultPartition

#: Event-time counters operators add to (``OperatorRuntime.count``), sampled per interval.
COUNTERS = ("late_records_dropped", "timers_fired", "windows_fired")


class TimerGauge:
    __slots__ = ("start", "accumulated", "total", "_lock")

    def __init__(self) -> None:
        self.start: int | None = None
        self.accumulated = 0
        self.total = 0
        self._lock = threading.Lock()

    def mark_start(self, now: int) -> None:
        with self._lock:
            if self.start is None:
                self.start = now

    def mark_end(self, now: int) -> None:
        with self._lock:
            if self.start is not None:
                self.accumulated += max(now - self.start, 0)
                self.start = None

    def sample(self, now: int) -> int:
        """Nanoseconds measured since the last sample."""
        with self._lock:
            value = self.accumulated
            if self.start is not None:
                value += max(now - self.start, 0)
                self.start = now
            self.accumulated = 0
            self.total += value
            return value

    def measured(self, now: int) -> int:
        """Nanoseconds measured over the gauge's life, up to ``now``."""
        with self._lock:
            running = max(now - self.start, 0) if self.start is not None else 0
            return self.total + self.accumulated + running


class TaskIOMetrics:
    def __init__(self, busy_time_enabled: bool, started: int, config: Config | None = None) -> None:
        self.idle = TimerGauge()
        #: the user metrics the task's operators register, sampled with these (as Flink's
        #: TaskMetricGroup holds the IO metrics and the operators' groups); None when
        #: ``python.metric.enabled`` is false
        enabled = config is None or config.section(PythonOptions).metric_enabled
        self.user = TaskMetricGroup() if enabled else None
        self.back_pressured = TimerGauge()
        self.busy_time_enabled = busy_time_enabled
        self.records_in = 0
        self.records_out = 0
        self._last_sample = started
        self._last_in = 0
        self._last_out = 0
        self.started = started
        self._latency_max: float = math.nan
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        self._last_counters = dict(self.counters)

    def output_available(self, mailbox: MailboxProcessor, partitions: list[ResultPartition], source: Any) -> bool:
        """Whether every output partition can take data. If one cannot, the task is back
        pressured: its default action is suspended with the back-pressured timer until that
        partition is available again (and a back-pressured ``source`` head's activity clock
        stands still: it is not idle)."""
        for partition in partitions:
            if not partition.is_available():
                partition.when_available(self.back_pressure(mailbox, source, "back_pressure"))
                return False
        return True

    def back_pressure(self, mailbox: MailboxProcessor, source: Any, reason: str) -> Callable[[], None]:
        """Suspend the task's default action, back pressured (``reason``: ``back_pressure`` for
        want of an output buffer, ``async_capacity`` while an async operator's queue is full);
        returns the resume callback. A back-pressured ``source`` head's activity clock stands
        still meanwhile."""
        suspension = mailbox.suspend_default_action(self.back_pressured, reason)
        if source is None:
            return suspension.resume
        activity = source.activity
        activity.pause("back_pressure")

        def resume() -> None:
            activity.resume("back_pressure")
            suspension.resume()

        return resume

    def record_latency(self, latency_ms: float) -> None:
        if math.isnan(self._latency_max) or latency_ms > self._latency_max:
            self._latency_max = latency_ms

    def sample(self, now: int) -> dict[str, float]:
        """Metrics since the previous sample as Flink's ``...TimeMsPerSecond`` rates: the
        measured time scaled to one second, so idle + busy + back pressured = 1000."""
        interval = max(now - self._last_sample, 0)
        idle = min(self.idle.sample(now), interval)
        back_pressured = min(self.back_pressured.sample(now), interval - idle)
        busy = interval - idle - back_pressured
        seconds = interval / NS_PER_S if interval else 0.0
        per_second = 1000.0 / interval if interval else 0.0  # ns measured -> ms per second
        records_in, records_out = self.records_in - self._last_in, self.records_out - self._last_out
        self._last_sample, self._last_in, self._last_out = now, self.records_in, self.records_out
        latency, self._latency_max = self._latency_max, math.nan
        counters, last = self.counters, self._last_counters
        counted = {name: counters[name] - last[name] for name in COUNTERS}
        self._last_counters = dict(counters)
        return {
            **counted,
            "latency_ms": latency,
            "interval_ms": interval / NS_PER_MS,
            "idle_ms": idle * per_second,
            "busy_ms": busy * per_second if self.busy_time_enabled else math.nan,
            "back_pressured_ms": back_pressured * per_second,
            "soft_back_pressured_ms": back_pressured * per_second,
            "records_in": records_in,
            "records_out": records_out,
            "records_in_per_second": records_in / seconds if seconds else 0.0,
            "records_out_per_second": records_out / seconds if seconds else 0.0,
        }

    def totals(self, now: int) -> dict[str, float]:
        """Accumulated ms over the task's life (without taking a sample)."""
        life = max(now - self.started, 0)
        idle = self.idle.measured(now)
        back_pressured = self.back_pressured.measured(now)
        busy = life - min(idle + back_pressured, life)
        return {"life_ms": life / NS_PER_MS, "idle_ms": idle / NS_PER_MS, "back_pressured_ms": back_pressured / NS_PER_MS,
                "busy_ms": busy / NS_PER_MS if self.busy_time_enabled else math.nan}

