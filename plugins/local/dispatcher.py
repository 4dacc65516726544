"""The Dispatcher: accepts jobs, starts a JobMaster per job, passes cancellations and
savepoint requests on to it, reports how jobs end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from kernel.runtime.cluster_events import JobSubmitted
from kernel.errors import JobNotRunning
from kernel.messaging import Component, MessagingService
from plugins.local import messages as m
from plugins.local.jobmaster.jobmaster import JobMaster

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run


class Dispatcher(Component):
    def __init__(self, messaging: MessagingService, run: Run, options: Any,
                 on_job_terminated: Callable[[m.JobTerminated], None], tracker: Any) -> None:
        super().__init__(m.DISPATCHER, messaging)
        self.run = run
        self.options = options
        self.tracker = tracker
        self.on_job_terminated = on_job_terminated
        self.job_masters: dict[str, JobMaster] = {}

    def handle_SubmitJob(self, message: m.SubmitJob, sender: str) -> str:
        job_graph = message.job_graph
        self.run.bus.emit(JobSubmitted(time=self.clock.now(), job_id=job_graph.job_id, job_name=job_graph.job_name))
        master = JobMaster(f"jobmaster-{job_graph.job_id[:8]}", self.messaging, self.run, job_graph, self.address,
                           self.options, self.tracker)
        self.job_masters[job_graph.job_id] = master
        master.start()
        return job_graph.job_id

    def handle_CancelJob(self, message: m.CancelJob, sender: str) -> None:
        master = self.job_masters.get(message.job_id)
        if master is not None:
            self.tell(master.address, message)

    def handle_TriggerSavepoint(self, message: m.TriggerSavepoint, sender: str) -> Any:
        master = self.job_masters.get(message.job_id)
        if master is None:
            raise JobNotRunning(f"job {message.job_id} is not running")
        return self.ask(master.address, message)

    def handle_JobTerminated(self, message: m.JobTerminated, sender: str) -> None:
        master = self.job_masters.pop(message.job_id, None)
        if master is not None:
            master.stop()
        self.on_job_terminated(message)
