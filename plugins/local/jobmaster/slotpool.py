"""The JobMaster's SlotPool (Flink's DeclarativeSlotPool).

Slots are declarative: the pool declares how many slots the job needs to the
ResourceManager, whose slot manager asks TaskExecutors to offer slots; the pool accepts
offers (from TaskExecutors connected to the JobMaster, while the job runs) that match
outstanding requests, one slot per execution slot sharing group. A request not fulfilled
within ``slot.request.timeout`` fails the scheduler's waiting execution.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from kernel.clock import NS_PER_MS
from kernel.runtime.cluster_events import SlotAllocated, SlotReleased
from plugins.local import messages as m
from plugins.local.events import ResourceRequirementsDeclared
from plugins.local.jobmaster.slotsharing import ExecutionSlotSharingGroup

if TYPE_CHECKING:
    from plugins.local.jobmaster.jobmaster import JobMaster
    from plugins.local.jobmaster.scheduler import DefaultScheduler


class AllocatedSlot:
    __slots__ = ("allocation_id", "resource_id", "slot_index")

    def __init__(self, allocation_id: str, resource_id: str, slot_index: int) -> None:
        self.allocation_id = allocation_id
        self.resource_id = resource_id
        self.slot_index = slot_index


class SlotPool:
    def __init__(self, job_master: JobMaster, scheduler: DefaultScheduler) -> None:
        self.job_master = job_master
        self.scheduler = scheduler
        self.job_id = job_master.job_id
        self.clock = job_master.clock
        self.options = job_master.options
        #: slot sharing group index -> its slot
        self.slots: dict[int, AllocatedSlot] = {}
        self.pending_requests: deque[ExecutionSlotSharingGroup] = deque()
        self.declared = -1
        self._request_timers: dict[int, Any] = {}

    def _emit(self, event: Any) -> None:
        self.job_master.emit(event)

    # -- requests -----------------------------------------------------------------------------

    def request(self, group: ExecutionSlotSharingGroup) -> None:
        self.pending_requests.append(group)
        timeout = self.options.slot_request_timeout * NS_PER_MS
        self._request_timers[group.index] = self.job_master.schedule(timeout, self._request_timed_out, group)

    def _request_timed_out(self, group: ExecutionSlotSharingGroup) -> None:
        self._request_timers.pop(group.index, None)
        if group not in self.pending_requests:
            return
        self.pending_requests.remove(group)
        self.declare()
        cause = (f"NoResourceAvailableException: could not acquire the minimum required resources (a slot for "
                 f"slot sharing group {group.slot_sharing_group!r}) within slot.request.timeout "
                 f"({self.options.slot_request_timeout} ms)")
        self.scheduler.slot_request_failed(group, cause)

    def fail_pending_requests(self, reason: str) -> None:
        """The ResourceManager cannot give the job the slots it waits for: the requests fail now."""
        failed, self.pending_requests = list(self.pending_requests), deque()
        for group in failed:
            timer = self._request_timers.pop(group.index, None)
            if timer is not None:
                timer.cancel()
        self.declare()
        for group in failed:
            self.scheduler.slot_request_failed(group, f"NoResourceAvailableException: could not acquire the minimum "
                                                      f"required resources: {reason}")

    def cancel_requests(self) -> None:
        """The job ends: no more request timeouts."""
        for timer in self._request_timers.values():
            timer.cancel()
        self._request_timers.clear()

    def declare(self, force: bool = False) -> None:
        """Tell the ResourceManager how many slots the job needs (when that changed, or ``force``)."""
        job_master = self.job_master
        wanted = len(self.slots) + len(self.pending_requests) if not self.scheduler.status.is_globally_terminal else 0
        if not job_master.rm_connected or (not force and wanted == self.declared):
            return
        self.declared = wanted
        self._emit(ResourceRequirementsDeclared(time=self.clock.now(), job_id=self.job_id, slots=wanted))
        answer = job_master.ask(m.RESOURCE_MANAGER, m.DeclareResourceRequirements(self.job_id, job_master.address, wanted),
                                self.options.rpc_timeout * NS_PER_MS)

        def declared(done: Any) -> None:
            if done.exception() is not None and job_master.rm_connected and self.declared == wanted:
                job_master.schedule(self.options.registration_error_delay * NS_PER_MS, self.declare, True)

        answer.add_done_callback(declared)

    # -- offers and releases ------------------------------------------------------------------

    def offer(self, resource_id: str, offers: tuple[tuple[str, int], ...], accepting: bool) -> m.SlotOfferReply:
        """A TaskExecutor offers slots; new ones are accepted for pending requests when
        ``accepting`` (it is connected and the job runs)."""
        accepted, rejected = [], []
        held = {slot.allocation_id for slot in self.slots.values()}
        for allocation_id, slot_index in offers:
            if allocation_id in held:
                accepted.append(allocation_id)  # offered again (a repeated or reconnecting offer)
            elif accepting and self.pending_requests:
                group = self.pending_requests.popleft()
                timer = self._request_timers.pop(group.index, None)
                if timer is not None:
                    timer.cancel()
                self.slots[group.index] = AllocatedSlot(allocation_id, resource_id, slot_index)
                accepted.append(allocation_id)
                self._emit(SlotAllocated(time=self.clock.now(), job_id=self.job_id, allocation_id=allocation_id,
                                         resource_id=resource_id, slot_index=slot_index))
            else:
                rejected.append(allocation_id)
        return m.SlotOfferReply(tuple(accepted), tuple(rejected))

    def remove(self, group_index: int, reason: str) -> AllocatedSlot:
        """The slot is gone (its TaskExecutor is lost)."""
        slot = self.slots.pop(group_index)
        self._emit(SlotReleased(time=self.clock.now(), job_id=self.job_id, allocation_id=slot.allocation_id,
                                resource_id=slot.resource_id, slot_index=slot.slot_index, reason=reason))
        return slot

    def release(self, group_index: int, reason: str) -> None:
        """Give the slot back to its TaskExecutor."""
        slot = self.slots.pop(group_index, None)
        if slot is not None:
            self._emit(SlotReleased(time=self.clock.now(), job_id=self.job_id, allocation_id=slot.allocation_id,
                                    resource_id=slot.resource_id, slot_index=slot.slot_index, reason=reason))
            self.job_master.tell(slot.resource_id, m.FreeSlot(slot.allocation_id, reason))

    def allocations_on(self, resource_id: str) -> tuple[str, ...]:
        """The AllocatedSlotReport: the allocations the pool holds on that TaskExecutor."""
        return tuple(s.allocation_id for s in self.slots.values() if s.resource_id == resource_id)
