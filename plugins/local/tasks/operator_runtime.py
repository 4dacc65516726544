"""The operators' view of the local cluster: the run's clock, timers as mailbox mails, the
watermarking plugin's generators, valves and alignment, async I/O executors, print output and
input files recorded."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Callable

from kernel.clock import NS_PER_MS
from kernel.runtime.cluster_events import SinkOutputPrinted, SourceFileOpened
from kernel.runtime.streaming.alignment import AlignmentMember
from kernel.runtime.streaming.runtime import OperatorRuntime, TaskInfo, print_to_stdout

if TYPE_CHECKING:
    from plugins.local.tasks.streamtask import StreamTask

#: file inputs up to this size are recorded in the event log with their content
MAX_RECORDED_INPUT = 64 << 20


class LocalOperatorRuntime(OperatorRuntime):
    """Operators' view of the local cluster: the run's clock, timers as mailbox mails."""

    def __init__(self, task: StreamTask, info: TaskInfo) -> None:
        run = task.run
        graph = task.deployment.job_graph.stream_graph
        interval = graph.auto_watermark_interval if graph.auto_watermark_interval is not None else task.execution_options.auto_watermark_interval
        super().__init__(info, run.rng.stream, batch=graph.runtime_mode == "BATCH", auto_watermark_interval=interval,
                         user_metrics=task.metrics.user, metrics_enabled=task.metrics.user is not None)
        self.task = task
        self.clock = run.clock

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def schedule(self, when_ms: int, callback: Callable[[], None]) -> Any:
        return self.task.schedule_mail(when_ms * NS_PER_MS, callback, "timer")

    def create_watermark_generator(self, strategy: Any, activity_clock: Callable[[], int] | None = None) -> Any:
        return self.task.run.plugin_manager.hook.create_watermark_generator(
            strategy=strategy, run=self.task.run, activity_clock=activity_clock or self.now_ms)

    def join_watermark_alignment(self, strategy: Any, on_announce: Callable[[int, int], None]) -> Any:
        task = self.task
        coordinator = task.deployment.alignment
        if coordinator is None:
            return None
        d = task.deployment
        member = AlignmentMember(d.vertex.id, d.vertex.name, d.subtask, d.attempt)

        def deliver(max_allowed: int, group_min: int) -> None:
            task.post(lambda: on_announce(max_allowed, group_min), "watermark alignment")

        return coordinator.join(strategy, member, deliver)

    def create_async_executor(self, operator_name: str) -> Any:
        from plugins.local.tasks.async_io import LocalAsyncExecutor  # asyncio only for jobs with async I/O

        executor = LocalAsyncExecutor(self.task, operator_name)
        self.task.async_executors.append(executor)
        return executor

    def create_watermark_valve(self, num_channels: int) -> Any:
        return self.task.run.plugin_manager.hook.create_watermark_valve(num_channels=num_channels, run=self.task.run)

    def write_stdout(self, text: str, sink: str = "", lines: int = 0) -> None:
        print_to_stdout(text)
        d = self.task.deployment
        self.task.run.bus.emit(SinkOutputPrinted(
            time=self.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, sink=sink, lines=lines, text=text,
        ))

    def open_input(self, path: str) -> str:
        run = self.task.run
        actual = run.input_overrides.get(path, path)
        content = b""
        with open(actual, "rb") as handle:
            data = handle.read(MAX_RECORDED_INPUT + 1)
            digest = hashlib.sha256(data)
            size = len(data)
            if size <= MAX_RECORDED_INPUT:
                content = data
            else:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
        d = self.task.deployment
        run.bus.emit(SourceFileOpened(
            time=self.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, path=path, size=size, sha256=digest.hexdigest(), content=content,
        ))
        return actual

    def emit_task_event(self, event_type: type, **fields: Any) -> None:
        d = self.task.deployment
        self.task.run.bus.emit(event_type(
            time=self.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, **fields))

    def input_override(self, name: str) -> str | None:
        return self.task.run.input_overrides.get(name)

    def count(self, metric: str, amount: int = 1) -> None:
        counters = self.task.metrics.counters
        counters[metric] = counters.get(metric, 0) + amount

    def record_latency(self, marker: Any) -> None:
        self.task.metrics.record_latency(self.clock.now_ms() - marker.marked_time)
