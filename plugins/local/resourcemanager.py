"""The ResourceManager and its slot manager (declarative, like Flink's FineGrainedSlotManager).

JobMasters declare how many slots their job needs; the slot manager matches declarations
against free slots of registered TaskExecutors (in registration order) and asks those
TaskExecutors to offer the slots to the job. What free slots cannot cover makes it start new
TaskExecutors (an active resource manager), up to ``slotmanager.number-of-slots.max``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kernel.cluster_events import JobMasterRegistered, SlotRequested, WorkerRegistered
from kernel.messaging import Component, MessagingService
from plugins.local import messages as m

if TYPE_CHECKING:
    from kernel.run import Run

ADDRESS = "resourcemanager"


class _Worker:
    def __init__(self, resource_id: str, slots: int) -> None:
        self.resource_id = resource_id
        self.slots: list[tuple[str, str] | None] = [None] * slots  # (job id, allocation id)
        self.registrations = 0


class ResourceManager(Component):
    def __init__(self, messaging: MessagingService, run: Run, slots_per_worker: int, max_slots: int,
                 start_worker: Callable[[], str]) -> None:
        super().__init__(ADDRESS, messaging)
        self.run = run
        self.slots_per_worker = slots_per_worker
        self.max_slots = max_slots
        self.start_worker = start_worker
        self.workers: dict[str, _Worker] = {}
        self.pending_workers: set[str] = set()
        self.job_masters: dict[str, str] = {}
        self.requirements: dict[str, int] = {}
        self._allocations = 0

    def _emit(self, event) -> None:
        self.run.bus.emit(event)

    # -- registration -------------------------------------------------------------------------

    def handle_RegisterJobMaster(self, message: m.RegisterJobMaster, sender: str) -> None:
        self.job_masters[message.job_id] = message.address
        self._emit(JobMasterRegistered(time=self.clock.now(), job_id=message.job_id, address=message.address))
        self.tell(sender, m.JobMasterRegistrationSuccess(message.job_id))

    def handle_RegisterTaskExecutor(self, message: m.RegisterTaskExecutor, sender: str) -> None:
        worker = self.workers.get(message.resource_id)
        if worker is None:
            worker = self.workers[message.resource_id] = _Worker(message.resource_id, message.slots)
        else:
            worker.slots = [None] * message.slots  # a re-registration releases the old slots
        worker.registrations += 1
        self.pending_workers.discard(message.resource_id)
        self._emit(WorkerRegistered(time=self.clock.now(), resource_id=message.resource_id, slots=message.slots,
                                    registration=worker.registrations))
        self.tell(sender, m.TaskExecutorRegistrationSuccess(message.resource_id))
        self._check_requirements()

    # -- slots --------------------------------------------------------------------------------

    def handle_DeclareResourceRequirements(self, message: m.DeclareResourceRequirements, sender: str) -> None:
        self.job_masters[message.job_id] = message.job_master
        self.requirements[message.job_id] = message.slots
        self._check_requirements()

    def handle_SlotFreed(self, message: m.SlotFreed, sender: str) -> None:
        worker = self.workers.get(message.resource_id)
        if worker is not None and worker.slots[message.slot_index] is not None:
            worker.slots[message.slot_index] = None
        self._check_requirements()

    def _allocated(self, job_id: str) -> int:
        return sum(1 for w in self.workers.values() for s in w.slots if s is not None and s[0] == job_id)

    def _check_requirements(self) -> None:
        missing_total = 0
        for job_id, required in self.requirements.items():
            missing = required - self._allocated(job_id)
            for worker in self.workers.values():
                for index, slot in enumerate(worker.slots):
                    if missing <= 0:
                        break
                    if slot is None:
                        self._allocations += 1
                        allocation_id = f"alloc-{self._allocations}"
                        worker.slots[index] = (job_id, allocation_id)
                        self._emit(SlotRequested(time=self.clock.now(), job_id=job_id, allocation_id=allocation_id,
                                                 resource_id=worker.resource_id, slot_index=index))
                        self.tell(worker.resource_id, m.RequestSlot(allocation_id, job_id, index, self.job_masters[job_id]))
                        missing -= 1
            missing_total += max(missing, 0)
        coming = len(self.pending_workers) * self.slots_per_worker
        total = (len(self.workers) + len(self.pending_workers)) * self.slots_per_worker
        while missing_total > coming and total + self.slots_per_worker <= self.max_slots:
            self.pending_workers.add(self.start_worker())
            coming += self.slots_per_worker
            total += self.slots_per_worker
