"""Messages between the local cluster's components (Flink's RPC gateway calls).

Plain data, so a cross-process transport can carry them; the in-process one hands the
objects over as they are (a JobGraph with its user functions, a deployment descriptor).
"""

from __future__ import annotations

from typing import Any

import msgspec


class Message(msgspec.Struct, frozen=True):
    pass


# -- Dispatcher ---------------------------------------------------------------------------------


class SubmitJob(Message):
    job_graph: Any


class CancelJob(Message):
    job_id: str
    reason: str = ""


class JobTerminated(Message):
    job_id: str
    status: str
    failure: str = ""


# -- ResourceManager ----------------------------------------------------------------------------


class RegisterJobMaster(Message):
    job_id: str
    address: str


class JobMasterRegistrationSuccess(Message):
    job_id: str


class RegisterTaskExecutor(Message):
    resource_id: str
    slots: int


class TaskExecutorRegistrationSuccess(Message):
    resource_id: str


class DeclareResourceRequirements(Message):
    job_id: str
    job_master: str
    slots: int


class SlotFreed(Message):
    resource_id: str
    slot_index: int
    allocation_id: str


class DisconnectJobManager(Message):
    job_id: str
    reason: str


# -- TaskExecutor -------------------------------------------------------------------------------


class RequestSlot(Message):
    allocation_id: str
    job_id: str
    slot_index: int
    job_master: str


class OfferSlots(Message):
    resource_id: str
    offers: tuple[tuple[str, int], ...]  # (allocation id, slot index)


class SlotOfferReply(Message):
    accepted: tuple[str, ...]
    rejected: tuple[str, ...]


class SubmitTask(Message):
    deployment: Any  # TaskDeploymentDescriptor


class CancelTask(Message):
    vertex_id: str
    subtask: int
    attempt: int


class FreeSlot(Message):
    allocation_id: str
    reason: str = ""


# -- JobMaster ----------------------------------------------------------------------------------


class UpdateTaskExecutionState(Message):
    vertex_id: str
    subtask: int
    attempt: int
    state: str
    failure: str = ""


class SlotRequestTimedOut(Message):
    request: int
