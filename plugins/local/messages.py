"""Messages between the local cluster's components (Flink's RPC gateway calls).

Plain data, so a cross-process transport can carry them; the in-process one hands the
objects over as they are (a JobGraph with its user functions, a deployment descriptor).
Requests that need an answer are sent with ``ask``: the handler's return value is the answer
(``ACK`` when there is nothing to say), an exception fails the asker's future.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

ACK = "ack"

#: the addresses of the cluster's singletons
DISPATCHER = "dispatcher"
RESOURCE_MANAGER = "resourcemanager"


class Message(msgspec.Struct, frozen=True):
    pass


@dataclass
class TaskSummary:
    """How a task ended, for the job's outcome: a TaskExecutor in another process sends it to
    the cluster's process when the task ends."""

    vertex_id: str
    vertex_name: str
    subtask: int
    attempt: int
    state: str
    records_in: int
    records_out: int
    totals: dict[str, float]


# -- Dispatcher ---------------------------------------------------------------------------------


class SubmitJob(Message):
    job_graph: Any


class CancelJob(Message):
    job_id: str
    reason: str = ""


class BackPressureJudgement(Message):
    """A back-pressure monitor's judgement of a job: its measure, and per job vertex it
    measured the largest ratio of its subtasks."""

    measure: str
    ratios: tuple[tuple[str, float], ...]


class JobTerminated(Message):
    job_id: str
    status: str
    failure: str = ""
    back_pressure: BackPressureJudgement | None = None  # when a monitor measured the job
    savepoint: str = ""  # the path of the savepoint the job stopped with
    savepoint_failure: str = ""  # why a stop-with-savepoint asked for did not stop it


# -- registration and connections ---------------------------------------------------------------


class RegisterJobMaster(Message):
    """JobMaster -> ResourceManager (ask; answered with ACK)."""

    job_id: str
    address: str


class RegisterTaskExecutor(Message):
    """TaskExecutor -> ResourceManager (ask): its slots and what they hold (the SlotReport)."""

    resource_id: str
    slots: int
    slot_report: tuple[tuple[int, str, str], ...] = ()  # (slot index, allocation id, job id) of allocated slots


class RegisterTaskManager(Message):
    """TaskExecutor -> JobMaster (ask): connect for a job before offering its slots; where it
    serves its partitions to other TaskExecutors (its TaskManagerLocation's data port; "":
    it runs in the JobMaster's process)."""

    job_id: str
    resource_id: str
    data_address: str = ""


class DisconnectResourceManager(Message):
    """ResourceManager -> JobMaster / TaskExecutor: the RM closed the connection (reconnect)."""

    reason: str


class DisconnectJobManager(Message):
    """JobMaster -> TaskExecutor: the JM closed the connection for the job."""

    job_id: str
    reason: str


class DisconnectTaskManager(Message):
    """TaskExecutor -> JobMaster: the TE closed the connection for the job."""

    resource_id: str
    reason: str


# -- heartbeats ---------------------------------------------------------------------------------


class HeartbeatRequest(Message):
    """A sender's heartbeat request (ask: its delivery counts for RPC-failure detection)."""

    channel: str  # rm-jm, rm-te, jm-te
    sender_id: str
    payload: Any = None


class HeartbeatResponse(Message):
    channel: str
    sender_id: str
    payload: Any = None


# -- slots --------------------------------------------------------------------------------------


class DeclareResourceRequirements(Message):
    """JobMaster -> ResourceManager (ask): the total number of slots the job needs."""

    job_id: str
    job_master: str
    slots: int


class RequestSlot(Message):
    """ResourceManager -> TaskExecutor (ask): allocate a slot for a job and offer it to its JM."""

    allocation_id: str
    job_id: str
    slot_index: int
    job_master: str


class SlotOccupied(Exception):
    """The answer to a RequestSlot for a slot holding another allocation."""


class OfferSlots(Message):
    """TaskExecutor -> JobMaster (ask), answered with a SlotOfferReply."""

    resource_id: str
    offers: tuple[tuple[str, int], ...]  # (allocation id, slot index)


class SlotOfferReply(Message):
    accepted: tuple[str, ...]
    rejected: tuple[str, ...]


class SlotFreed(Message):
    """TaskExecutor -> ResourceManager."""

    resource_id: str
    slot_index: int
    allocation_id: str


class FreeSlot(Message):
    """JobMaster -> TaskExecutor."""

    allocation_id: str
    reason: str = ""


class AllocationsFailed(Message):
    """ResourceManager -> JobMaster: slots of a lost TaskExecutor are gone."""

    resource_id: str
    allocation_ids: tuple[str, ...]
    reason: str


class NotEnoughResourcesAvailable(Message):
    """ResourceManager -> JobMaster: the job's declared slots cannot all be had, however long it
    waits (Flink's ``notifyNotEnoughResourcesAvailable``)."""

    job_id: str
    reason: str


# -- tasks --------------------------------------------------------------------------------------


class SubmitTask(Message):
    """JobMaster -> TaskExecutor (ask)."""

    deployment: Any  # TaskDeploymentDescriptor


class CancelTask(Message):
    """JobMaster -> TaskExecutor (ask)."""

    vertex_id: str
    subtask: int
    attempt: int


class FinishStagedOutput(Message):
    """JobMaster -> TaskExecutor in another process (ask), when a job whose sinks stage their
    output ended: commit what these attempts staged there (in this order); ``discard_rest``:
    then discard everything else staged there."""

    job_id: str
    attempts: tuple[tuple[str, int, int], ...] = ()
    discard_rest: bool = True


class RequestTaskBackPressure(Message):
    """JobMaster -> TaskExecutor (ask): sample whether a task is back pressured (Flink's
    ``requestTaskBackPressure``), answered with a TaskBackPressureResponse."""

    vertex_id: str
    subtask: int
    attempt: int
    num_samples: int
    delay_between_samples_ms: int


class TaskBackPressureResponse(Message):
    samples: int
    back_pressured_samples: int


class UpdateTaskExecutionState(Message):
    """TaskExecutor -> JobMaster (ask; final states are repeated until answered)."""

    vertex_id: str
    subtask: int
    attempt: int
    state: str
    failure: str = ""


# -- checkpoints (acknowledgements and declines are kernel.runtime.checkpointing.messages) --------------


class TriggerCheckpoint(Message):
    """JobMaster -> TaskExecutor: start a checkpoint at a task (a source, or a task whose inputs
    all finished), with barriers of that kind (``CheckpointBarrier``, with the storage
    ``location`` they name); ``stop``: the savepoint of a stop-with-savepoint (``drain``: draining)."""

    vertex_id: str
    subtask: int
    attempt: int
    checkpoint_id: int
    timestamp: int
    aligned: bool
    unaligned: bool = False
    alignment_timeout: int = 0
    stop: bool = False
    drain: bool = False
    location: str = ""


class TriggerSavepoint(Message):
    """Client -> Dispatcher -> JobMaster: take a savepoint under ``directory`` (None: the
    default); ``terminate``: stop the job with it (``drain`` first). The answer is its path."""

    job_id: str
    directory: str | None = None
    terminate: bool = False
    drain: bool = False


class NotifyCheckpointComplete(Message):
    """JobMaster -> TaskExecutor."""

    vertex_id: str
    subtask: int
    attempt: int
    checkpoint_id: int


class NotifyCheckpointAborted(Message):
    """JobMaster -> TaskExecutor."""

    vertex_id: str
    subtask: int
    attempt: int
    checkpoint_id: int


class NotifyEndOfData(Message):
    """TaskExecutor -> JobMaster: a task finished its input and operators (FLIP-147) and waits
    for its final checkpoint."""

    job_id: str
    vertex_id: str
    subtask: int
    attempt: int
