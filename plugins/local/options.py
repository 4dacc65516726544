"""The local cluster's keys: TaskExecutors and slots, the network, RPC and registrations
(Flink's TaskManagerOptions, NettyShuffleEnvironmentOptions, ResourceManagerOptions,
JobManagerOptions, ClusterOptions and RPC keys), registered by plugin ``backend.local``.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs, MemoryBytes


class ClusterOptions(Section):
    deprecated_keys = {"task.cancellation-interval": "task.cancellation.interval"}

    task_slots: Annotated[int, msgspec.Meta(ge=1, description="slots per TaskExecutor")] = msgspec.field(
        name="taskmanager.numberOfTaskSlots", default=1
    )
    max_slots: Annotated[
        int, msgspec.Meta(ge=1, description="most slots the ResourceManager starts TaskExecutors for")
    ] = msgspec.field(name="slotmanager.number-of-slots.max", default=2147483647)
    buffers_per_channel: Annotated[int, msgspec.Meta(ge=1, description="exclusive buffers (credits) per input channel")] = (
        msgspec.field(name="taskmanager.network.memory.buffers-per-channel", default=2)
    )
    floating_buffers_per_gate: Annotated[int, msgspec.Meta(ge=0, description="floating buffers per input gate")] = (
        msgspec.field(name="taskmanager.network.memory.floating-buffers-per-gate", default=8)
    )
    max_buffers_per_channel: Annotated[
        int, msgspec.Meta(ge=1, description="buffers one output subpartition may hold before its writer is unavailable")
    ] = msgspec.field(name="taskmanager.network.memory.max-buffers-per-channel", default=10)
    segment_size: Annotated[MemoryBytes, msgspec.Meta(ge=1, description="network buffer size")] = msgspec.field(
        name="taskmanager.memory.segment-size", default=32 * 1024
    )
    record_size: Annotated[
        int, msgspec.Meta(ge=1, description="bytes a record is assumed to take in a network buffer (records per buffer = segment-size / this)")
    ] = msgspec.field(name="rill.network.record-size", default=32)
    rpc_address: Annotated[
        str, msgspec.Meta(description="where the cluster's process listens for TaskExecutor processes")
    ] = msgspec.field(name="jobmanager.rpc.address", default="127.0.0.1")
    rpc_port: Annotated[
        int, msgspec.Meta(ge=0, le=65535, description="the port of jobmanager.rpc.address (0: any free one)")
    ] = msgspec.field(name="jobmanager.rpc.port", default=0)
    rpc_bind_host: Annotated[
        str | None, msgspec.Meta(description="the local address the cluster's process listens on (unset: "
                                             "jobmanager.rpc.address)")
    ] = msgspec.field(name="jobmanager.bind-host", default=None)
    taskmanager_host: Annotated[
        str, msgspec.Meta(description="where a TaskExecutor process listens for other TaskExecutors' partition requests")
    ] = msgspec.field(name="taskmanager.host", default="127.0.0.1")
    taskmanager_bind_host: Annotated[
        str | None, msgspec.Meta(description="the local address a TaskExecutor process serves its partitions on "
                                             "(unset: taskmanager.host)")
    ] = msgspec.field(name="taskmanager.bind-host", default=None)
    slot_request_timeout: Annotated[DurationMs, msgspec.Meta(ge=0, description="a slot request failing after this long fails the job")] = (
        msgspec.field(name="slot.request.timeout", default=300_000)
    )
    requirement_check_delay: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="the slot manager checks resource requirements this long after a change")
    ] = msgspec.field(name="slotmanager.requirement-check.delay", default=50)
    rpc_timeout: Annotated[DurationMs, msgspec.Meta(ge=1, description="timeout of requests between components")] = (
        msgspec.field(name="pekko.ask.timeout", default=10_000)
    )
    registration_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="a TaskExecutor not registered at the ResourceManager this long shuts down")
    ] = msgspec.field(name="taskmanager.registration.timeout", default=300_000)
    registration_initial_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="first registration attempt's timeout (doubles per attempt)")
    ] = msgspec.field(name="cluster.registration.initial-timeout", default=100)
    registration_max_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="largest registration attempt timeout")
    ] = msgspec.field(name="cluster.registration.max-timeout", default=30_000)
    registration_error_delay: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="pause after a registration attempt failed")
    ] = msgspec.field(name="cluster.registration.error-delay", default=10_000)
    taskmanager_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="a TaskExecutor without allocated slots this long is released")
    ] = msgspec.field(name="resourcemanager.taskmanager-timeout", default=30_000)
    worker_registration_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="a started worker not registered this long is released and replaced")
    ] = msgspec.field(name="resourcemanager.taskmanager-registration.timeout", default=300_000)
    start_worker_max_failure_rate: Annotated[
        float, msgspec.Meta(gt=0, description="worker start failures per minute above which requests pause")
    ] = msgspec.field(name="resourcemanager.start-worker.max-failure-rate", default=10.0)
    start_worker_retry_interval: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="pause of worker requests after too many start failures")
    ] = msgspec.field(name="resourcemanager.start-worker.retry-interval", default=3_000)
    slot_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="how long a TaskExecutor keeps the slots of a lost JobMaster")
    ] = msgspec.field(name="taskmanager.slot.timeout", default=10_000)

    cancellation_interval: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="a cancelled task still running is interrupted again this often")
    ] = msgspec.field(name="task.cancellation.interval", default=30_000)
    cancellation_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="a cancelled task still running after this long is stuck: the "
                                                   "TaskExecutor gives up (embedded: the run ends); 0: wait forever")
    ] = msgspec.field(name="task.cancellation.timeout", default=180_000)

    @property
    def records_per_buffer(self) -> int:
        return max(1, self.segment_size // self.record_size)
