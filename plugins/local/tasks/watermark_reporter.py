"""What a task records of its watermark progress."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.clock import MIN_LONG
from kernel.runtime.cluster_events import WatermarkAdvanced, WatermarkStatusChanged

if TYPE_CHECKING:
    from plugins.local.tasks.streamtask import StreamTask


class WatermarkReporter:
    """Records a task's watermark progress: what each input valve passes on, and what leaves
    the chain (into the network, or reaching a sink at its end) once per task."""

    def __init__(self, task: StreamTask) -> None:
        self.task = task
        self.last_output = MIN_LONG
        self.output_idle = False
        self.inputs: dict[int, int] = {}  # input gate -> last watermark its valve passed on
        self.statuses: dict[str, str] = {}  # "output" / "input N" -> last status reported

    def _emit(self, event_type: type, **fields: Any) -> None:
        task = self.task
        d = task.deployment
        task.run.bus.emit(event_type(
            time=task.run.clock.now(), job_id=d.job_id, vertex_id=d.vertex.id, vertex_name=d.vertex.name,
            subtask=d.subtask, attempt=d.attempt, **fields,
        ))

    def input_watermark(self, index: int, timestamp: int) -> None:
        self.inputs[index] = timestamp
        self._emit(WatermarkAdvanced, direction="input", input=index, watermark=timestamp)

    def input_status(self, index: int, idle: bool) -> None:
        self.statuses[f"input {index}"] = "IDLE" if idle else "ACTIVE"
        self._emit(WatermarkStatusChanged, direction="input", input=index, status="IDLE" if idle else "ACTIVE")

    def output_watermark(self, timestamp: int) -> None:
        if timestamp > self.last_output:
            self.last_output = timestamp
            self._emit(WatermarkAdvanced, direction="output", watermark=timestamp, event_time=self._event_time())

    def _event_time(self) -> int | None:
        """The largest event time the chain's last timestamp-assigning operator has seen."""
        chain = self.task.chain
        for operator in reversed(chain.operators if chain is not None else ()):
            probe = getattr(operator, "max_event_time", None)
            if probe is not None:
                return probe()
        return None

    def output_status(self, idle: bool) -> None:
        if idle != self.output_idle:
            self.output_idle = idle
            self.statuses["output"] = "IDLE" if idle else "ACTIVE"
            self._emit(WatermarkStatusChanged, direction="output", status="IDLE" if idle else "ACTIVE")
