"""What a TaskExecutor is given (Flink's ``TaskManagerServices``).

An embedded TaskExecutor gets the :class:`~plugins.local.minicluster.MiniCluster`'s, a
TaskExecutor in a process of its own its process's
(:class:`~plugins.local.runner.WorkerProcessServices`): the shuffle environment its tasks'
partitions and gates live in, the injected faults, the recovery tracker, what becomes of a
deployment and of an ended task there, where sinks stage their output, and what a fatal error
does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run
    from kernel.runtime.streaming.committer import SinkCommitter
    from plugins.local.deployment import TaskDeploymentDescriptor
    from plugins.local.faults import FaultInjector
    from plugins.local.network.shuffle import NetworkSettings, ShuffleEnvironment
    from plugins.local.recovery import RecoveryTracker
    from plugins.local.tasks.streamtask import StreamTask


class TaskManagerServices(Protocol):
    run: Run
    #: the partitions and input gates of the TaskExecutor's tasks
    shuffle: ShuffleEnvironment
    network_settings: NetworkSettings
    #: ``raise`` faults instrument the tasks' operators
    faults: FaultInjector
    #: failures detected and recoveries, for the run's summary
    tracker: RecoveryTracker
    #: where the tasks' sinks stage their output until the JobMaster finishes it, when the job
    #: stages it in the TaskExecutor (a JobMaster in another process)
    staged_output: SinkCommitter

    def localize(self, deployment: TaskDeploymentDescriptor) -> TaskDeploymentDescriptor:
        """The deployment as a TaskExecutor here runs it."""

    def task_ended(self, task: StreamTask) -> None:
        """A task ended: its summary goes where the run's outcome is built."""

    def fatal_error(self, address: str, message: str) -> None:
        """The TaskExecutor of ``address`` cannot go on (a task stuck after being stopped)."""
