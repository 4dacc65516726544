"""Config sections the kernel itself reads. Flink's key names where Flink has the setting;
rill's own settings under ``rill.``."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs, MemoryBytes


class RillOptions(Section):
    """How a run is driven."""

    clock: Annotated[
        Literal["realtime", "simulated"],
        msgspec.Meta(description="realtime: the wall clock; simulated: virtual time jumps to the next timer"),
    ] = msgspec.field(name="rill.clock", default="realtime")
    seed: Annotated[
        int, msgspec.Meta(description="seed of the kernel's RNG (all runtime randomness)")
    ] = msgspec.field(name="rill.seed", default=0)




class EventOptions(Section):
    """How events travel from the runtime to observers."""

    flush_interval: Annotated[
        DurationMs, msgspec.Meta(description="how often observers receive the pending events (bounds the loss on a crash)")
    ] = msgspec.field(name="rill.events.flush-interval", default=1000)
    level: Annotated[
        Literal["default", "debug"],
        msgspec.Meta(description="debug also records high-rate events (mailbox suspensions)"),
    ] = msgspec.field(name="rill.events.level", default="default")

    def check(self) -> None:
        if self.flush_interval <= 0:
            raise ValueError("rill.events.flush-interval must be positive")


class CoreOptions(Section):
    """Flink's CoreOptions / PipelineOptions / ExecutionOptions read when a program is compiled."""

    parallelism: Annotated[int, msgspec.Meta(ge=1, description="default parallelism of operators")] = msgspec.field(
        name="parallelism.default", default=1
    )
    max_parallelism: Annotated[
        int, msgspec.Meta(ge=-1, le=32768, description="max parallelism (key groups); -1: derived per operator")
    ] = msgspec.field(name="pipeline.max-parallelism", default=-1)
    chaining: Annotated[bool, msgspec.Meta(description="chain operators where Flink's conditions allow")] = msgspec.field(
        name="pipeline.operator-chaining.enabled", default=True
    )
    chain_different_max_parallelism: Annotated[
        bool, msgspec.Meta(description="chain operators whose max parallelism differs")
    ] = msgspec.field(name="pipeline.operator-chaining.chain-operators-with-different-max-parallelism", default=True)
    job_name: Annotated[str, msgspec.Meta(description="job name when execute() is given none")] = msgspec.field(
        name="pipeline.name", default=""
    )
    runtime_mode: Annotated[
        Literal["STREAMING", "BATCH", "AUTOMATIC"], msgspec.Meta(description="execution.runtime-mode")
    ] = msgspec.field(name="execution.runtime-mode", default="STREAMING")

    def check(self) -> None:
        if self.max_parallelism == 0:
            raise ValueError("pipeline.max-parallelism must be -1 (unset) or between 1 and 32768")


class RuntimeOptions(Section):
    """Flink's runtime keys read by the execution backends."""

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
    segment_size: Annotated[MemoryBytes, msgspec.Meta(description="network buffer size")] = msgspec.field(
        name="taskmanager.memory.segment-size", default=32 * 1024
    )
    record_size: Annotated[
        int, msgspec.Meta(ge=1, description="bytes a record is assumed to take in a network buffer (records per buffer = segment-size / this)")
    ] = msgspec.field(name="rill.network.record-size", default=32)
    buffer_timeout: Annotated[DurationMs, msgspec.Meta(description="flush partially filled buffers this often (0: after every batch)")] = (
        msgspec.field(name="execution.buffer-timeout.interval", default=100)
    )
    buffer_timeout_enabled: Annotated[bool, msgspec.Meta(description="false: flush only full buffers")] = msgspec.field(
        name="execution.buffer-timeout.enabled", default=True
    )
    slot_request_timeout: Annotated[DurationMs, msgspec.Meta(description="a slot request failing after this long fails the job")] = (
        msgspec.field(name="slot.request.timeout", default=300_000)
    )
    auto_watermark_interval: Annotated[DurationMs, msgspec.Meta(description="periodic watermark interval (0 disables)")] = (
        msgspec.field(name="pipeline.auto-watermark-interval", default=200)
    )
    latency_interval: Annotated[DurationMs, msgspec.Meta(description="latency markers from sources this often (0: off)")] = (
        msgspec.field(name="metrics.latency.interval", default=0)
    )
    duration: Annotated[DurationMs, msgspec.Meta(ge=0, description="stop the job after this much clock time (0: run until it ends)")] = (
        msgspec.field(name="rill.duration", default=0)
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
    slot_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="how long a TaskExecutor keeps the slots of a lost JobMaster")
    ] = msgspec.field(name="taskmanager.slot.timeout", default=10_000)

    @property
    def records_per_buffer(self) -> int:
        return max(1, self.segment_size // self.record_size)


KERNEL_SECTIONS: tuple[type[Section], ...] = (RillOptions, EventOptions, CoreOptions, RuntimeOptions)
