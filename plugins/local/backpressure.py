"""The TaskExecutor's BackPressureSampleService (Flink 1.11-1.12): it answers a JobMaster's
``RequestTaskBackPressure`` by sampling whether the task is back pressured ``num_samples``
times, ``delay-between-samples`` apart on the TaskExecutor's timers, the first sample at once.

A task is back pressured (Flink's ``Task.isBackPressured()``) while it runs and one of its
output partitions has no buffer available: the condition that suspends its mailbox with the
back-pressured timer (:meth:`TaskIOMetrics.output_available`). A task that stops running
meanwhile ends the sampling early: the answer counts the samples taken, the last of them not
back pressured (as Flink's service completes with a partial list).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernel.clock import NS_PER_MS
from kernel.messaging import Future
from plugins.local import messages as m

if TYPE_CHECKING:
    from kernel.messaging import Component
    from plugins.local.tasks.streamtask import StreamTask


def is_back_pressured(task: StreamTask) -> bool:
    return task.state == "RUNNING" and not all(partition.is_available() for partition in task.partitions)


class BackPressureSampleService:
    def __init__(self, owner: Component) -> None:
        self.owner = owner

    def sample(self, task: StreamTask, request: m.RequestTaskBackPressure) -> Future:
        """A Future of the TaskBackPressureResponse; refuses a task that is not running."""
        if task.state != "RUNNING":
            raise RuntimeError(f"Cannot sample task {task.name}: it is not running ({task.state})")
        answer = Future(self.owner.loop)
        delay = request.delay_between_samples_ms * NS_PER_MS
        counts = [0, 0]  # samples, back pressured

        def take(remaining: int) -> None:
            counts[0] += 1
            counts[1] += is_back_pressured(task)
            if task.state == "RUNNING" and remaining > 1:
                self.owner.schedule(delay, take, remaining - 1, daemon=True)
            else:
                answer.set_result(m.TaskBackPressureResponse(counts[0], counts[1]))

        take(request.num_samples)
        return answer
