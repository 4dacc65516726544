"""The ResourceManager's SlotManager (declarative, like Flink's FineGrainedSlotManager).

JobMasters declare how many slots their job needs; TaskExecutors register with their slot
report, and their heartbeats' slot reports keep the slot table in sync. The slot manager matches
the declarations against free slots of registered TaskExecutors (in registration order) and
asks those TaskExecutors for the slots, which they offer to the job's JobMaster; what free
slots cannot cover it declares to its :class:`ResourceAllocator` (the ResourceManager, which
starts workers for it). A registered TaskExecutor without allocated slots for
``resourcemanager.taskmanager-timeout`` is handed back to the allocator to release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from kernel.clock import NS_PER_MS
from plugins.local import messages as m
from plugins.local.events import SlotRequested

if TYPE_CHECKING:
    from kernel.events import Event
    from kernel.messaging import Component


class ResourceAllocator(Protocol):
    """What the slot manager asks of its ResourceManager (Flink's ``ResourceAllocator``)."""

    def declare_missing_slots(self, missing: int, registered: int) -> int:
        """``missing`` slots are required that the ``registered`` TaskExecutors cannot give:
        how many of them no worker it may start will give (``slotmanager.number-of-slots.max``)."""

    def not_enough_resources(self, job_id: str, reason: str) -> None:
        """The job's requirements cannot be fulfilled (Flink's ``notifyNotEnoughResourcesAvailable``)."""

    def release_idle_worker(self, resource_id: str, reason: str) -> None:
        """The TaskExecutor has had no allocated slot for ``resourcemanager.taskmanager-timeout``."""


class _Slot:
    __slots__ = ("job_id", "allocation_id", "pending")

    def __init__(self, job_id: str, allocation_id: str, pending: bool) -> None:
        self.job_id = job_id
        self.allocation_id = allocation_id
        self.pending = pending  # requested, not yet confirmed by the TaskExecutor


class _TaskManager:
    """A registered TaskExecutor's slots, as the slot manager knows them."""

    def __init__(self, resource_id: str, slots: int) -> None:
        self.resource_id = resource_id
        self.slots: list[_Slot | None] = [None] * slots
        self.idle_check: Any = None  # resourcemanager.taskmanager-timeout while no slot is allocated

    def idle(self) -> bool:
        return all(slot is None for slot in self.slots)


class SlotManager:
    """``owner`` is the ResourceManager's endpoint (its timers and the requests to
    TaskExecutors), ``job_masters`` its registered JobMasters (job id -> address)."""

    def __init__(self, owner: Component, allocator: ResourceAllocator, options: Any, job_masters: dict[str, str],
                 emit: Callable[[Event], None]) -> None:
        self.owner = owner
        self.allocator = allocator
        self.options = options
        self.job_masters = job_masters
        self.emit = emit
        self.task_managers: dict[str, _TaskManager] = {}
        self.requirements: dict[str, int] = {}  # job id -> slots declared
        self._allocations = 0
        self._check_scheduled = False

    # -- TaskExecutors ----------------------------------------------------------------------------

    def is_registered(self, resource_id: str) -> bool:
        return resource_id in self.task_managers

    def register_task_manager(self, resource_id: str, slots: int, slot_report: Any) -> None:
        task_manager = self.task_managers[resource_id] = _TaskManager(resource_id, slots)
        for index, allocation_id, job_id in slot_report:
            task_manager.slots[index] = _Slot(job_id, allocation_id, pending=False)
        self._watch_idle(task_manager)
        self.check_requirements_soon()

    def unregister_task_manager(self, resource_id: str) -> dict[str, list[str]] | None:
        """Forget a TaskExecutor: its allocations by job (None: it was not registered)."""
        task_manager = self.task_managers.pop(resource_id, None)
        if task_manager is None:
            return None
        if task_manager.idle_check is not None:
            task_manager.idle_check.cancel()
        failed: dict[str, list[str]] = {}
        for slot in task_manager.slots:
            if slot is not None:
                failed.setdefault(slot.job_id, []).append(slot.allocation_id)
        return failed

    def report_slot_status(self, resource_id: str, slot_report: Any) -> None:
        """Sync the slot table with the TaskExecutor's slot report (pending requests stay)."""
        task_manager = self.task_managers.get(resource_id)
        if task_manager is None or slot_report is None:
            return
        reported = {index: (allocation_id, job_id) for index, allocation_id, job_id in slot_report}
        changed = False
        for index, slot in enumerate(task_manager.slots):
            held = reported.get(index)
            if held is None and slot is not None and not slot.pending:
                task_manager.slots[index] = None
                changed = True
            elif held is not None and (slot is None or (not slot.pending and slot.allocation_id != held[0])):
                task_manager.slots[index] = _Slot(held[1], held[0], pending=False)
        if changed:
            self._watch_idle(task_manager)
            self.check_requirements_soon()

    def free_slot(self, resource_id: str, slot_index: int, allocation_id: str) -> None:
        task_manager = self.task_managers.get(resource_id)
        if task_manager is not None and slot_index < len(task_manager.slots):
            slot = task_manager.slots[slot_index]
            if slot is not None and slot.allocation_id == allocation_id:
                task_manager.slots[slot_index] = None
                self._watch_idle(task_manager)
        self.check_requirements_soon()

    def _idle_timed_out(self, task_manager: _TaskManager) -> None:
        task_manager.idle_check = None
        if self.task_managers.get(task_manager.resource_id) is task_manager and task_manager.idle():
            self.allocator.release_idle_worker(
                task_manager.resource_id,
                f"idle for resourcemanager.taskmanager-timeout ({self.options.taskmanager_timeout} ms)")

    def _watch_idle(self, task_manager: _TaskManager) -> None:
        if task_manager.idle():
            if task_manager.idle_check is None:
                task_manager.idle_check = self.owner.schedule(self.options.taskmanager_timeout * NS_PER_MS,
                                                              self._idle_timed_out, task_manager)
        elif task_manager.idle_check is not None:
            task_manager.idle_check.cancel()
            task_manager.idle_check = None

    # -- requirements -----------------------------------------------------------------------------

    def process_resource_requirements(self, job_id: str, slots: int) -> None:
        self.requirements[job_id] = slots
        self.check_requirements_soon()

    def clear_resource_requirements(self, job_id: str) -> None:
        self.requirements.pop(job_id, None)

    def _allocated(self, job_id: str) -> int:
        return sum(1 for t in self.task_managers.values() for s in t.slots if s is not None and s.job_id == job_id)

    def check_requirements_soon(self) -> None:
        if not self._check_scheduled:
            self._check_scheduled = True
            self.owner.schedule(self.options.requirement_check_delay * NS_PER_MS, self._check_requirements)

    def _check_requirements(self) -> None:
        self._check_scheduled = False
        missing_by_job: dict[str, int] = {}
        for job_id, required in list(self.requirements.items()):
            missing = required - self._allocated(job_id)
            for task_manager in self.task_managers.values():
                for index, slot in enumerate(task_manager.slots):
                    if missing <= 0:
                        break
                    if slot is None:
                        self._request_slot(task_manager, index, job_id)
                        missing -= 1
            if missing > 0:
                missing_by_job[job_id] = missing
        missing_total = sum(missing_by_job.values())
        unavailable = self.allocator.declare_missing_slots(missing_total, len(self.task_managers))
        if unavailable <= 0:
            return
        coming = missing_total - unavailable  # the slots of workers coming, for the jobs in declaration order
        for job_id, missing in missing_by_job.items():
            if missing <= coming:
                coming -= missing
                continue
            self.allocator.not_enough_resources(job_id, (
                f"{missing - coming} of the {self.requirements[job_id]} slots the job needs cannot be had: the "
                f"cluster holds at most slotmanager.number-of-slots.max = {self.options.max_slots}"))
            coming = 0

    def _request_slot(self, task_manager: _TaskManager, index: int, job_id: str) -> None:
        self._allocations += 1
        allocation_id = f"alloc-{self._allocations}"
        task_manager.slots[index] = _Slot(job_id, allocation_id, pending=True)
        self._watch_idle(task_manager)
        self.emit(SlotRequested(time=self.owner.clock.now(), job_id=job_id, allocation_id=allocation_id,
                                resource_id=task_manager.resource_id, slot_index=index))
        request = m.RequestSlot(allocation_id, job_id, index, self.job_masters[job_id])
        answer = self.owner.ask(task_manager.resource_id, request, self.options.rpc_timeout * NS_PER_MS)
        answer.add_done_callback(lambda done: self._slot_requested(task_manager, index, allocation_id,
                                                                   done.exception()))

    def _slot_requested(self, task_manager: _TaskManager, index: int, allocation_id: str,
                        error: BaseException | None) -> None:
        registered = self.task_managers.get(task_manager.resource_id) is task_manager
        slot = task_manager.slots[index] if registered else None
        if slot is None or slot.allocation_id != allocation_id:
            return
        if error is None:
            slot.pending = False
        elif isinstance(error, m.SlotOccupied):  # the TaskExecutor holds another allocation there
            held_allocation, held_job = error.args
            task_manager.slots[index] = _Slot(held_job, held_allocation, pending=False)
            self.check_requirements_soon()
        else:  # unreachable or no answer: not allocated; the next slot report tells the truth
            task_manager.slots[index] = None
            self._watch_idle(task_manager)
            self.check_requirements_soon()
