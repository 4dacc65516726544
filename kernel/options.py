"""Config sections of the kernel: how a run is driven, how its events travel, and a job's
settings (Flink's core, pipeline and execution keys) that the API and any runtime read.
Flink's key names where Flink has the setting; rill's own settings under ``rill.``. The keys
of one runtime (the local cluster's TaskExecutors, network, RPC) are that plugin's."""

from __future__ import annotations

import os
from typing import Annotated, Literal

import msgspec

from kernel.runtime.checkpointing.options import CheckpointingOptions
from kernel.runtime.checkpointing.recovery import StateRecoveryOptions
from kernel.config import Section
from kernel.configtypes import DurationMs, MemoryBytes
from kernel.lifecycle.pythonenv.options import PythonOptions
from kernel.sqlbounds import SqlOptions


#: the seeds a run records (a BIGINT in the event log)
SEED_RANGE = (-(1 << 63), (1 << 63) - 1)


class RillOptions(Section):
    """How a run is driven."""

    clock: Annotated[
        Literal["realtime", "simulated"],
        msgspec.Meta(description="realtime: the wall clock; simulated: virtual time jumps to the next timer"),
    ] = msgspec.field(name="rill.clock", default="realtime")
    seed: Annotated[
        int, msgspec.Meta(ge=SEED_RANGE[0], le=SEED_RANGE[1], description="seed of the kernel's RNG (all runtime "
                                                                          "randomness; a 64-bit integer)")
    ] = msgspec.field(name="rill.seed", default=0)
    duration: Annotated[DurationMs, msgspec.Meta(ge=0, description="stop the job after this much clock time (0: run until it ends)")] = (
        msgspec.field(name="rill.duration", default=0)
    )
    stop_with_savepoint: Annotated[
        str | None, msgspec.Meta(description="at rill.duration, stop the job with a savepoint under this directory "
                                             "(instead of cancelling it)"),
    ] = msgspec.field(name="rill.stop-with-savepoint", default=None)

    def check(self) -> None:
        if self.stop_with_savepoint == "":
            raise ValueError("rill.stop-with-savepoint: give a directory")
        if self.stop_with_savepoint is not None and self.duration == 0:
            raise ValueError("rill.stop-with-savepoint stops the job when rill.duration has passed: set rill.duration")


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


class ExecutionOptions(Section):
    """Flink's ExecutionOptions / PipelineOptions / MetricOptions that a runtime executing a
    streaming job honours (a BATCH backend has no use for them)."""

    buffer_timeout: Annotated[DurationMs, msgspec.Meta(ge=0, description="flush partially filled buffers this often (0: after every batch)")] = (
        msgspec.field(name="execution.buffer-timeout.interval", default=100)
    )
    buffer_timeout_enabled: Annotated[bool, msgspec.Meta(description="false: flush only full buffers")] = msgspec.field(
        name="execution.buffer-timeout.enabled", default=True
    )
    auto_watermark_interval: Annotated[DurationMs, msgspec.Meta(ge=0, description="periodic watermark interval (0 disables)")] = (
        msgspec.field(name="pipeline.auto-watermark-interval", default=200)
    )
    latency_interval: Annotated[DurationMs, msgspec.Meta(ge=0, description="latency markers from sources this often (0: off)")] = (
        msgspec.field(name="metrics.latency.interval", default=0)
    )


class WorkerOptions(Section):
    """What every workers plugin's ResourceManager driver honours."""

    stop_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="how long a released TaskExecutor outside the cluster's process may "
                                                   "take to end before it is killed (processes: SIGKILL; spark: its "
                                                   "Spark job cancelled)")
    ] = msgspec.field(name="rill.workers.stop-timeout", default=10_000)


class SecurityOptions(Section):
    """How the processes of a run trust each other (kernel/remoting/security.py): Flink's
    ``security.ssl.internal.*`` keys (mutual TLS between rill's processes, PEM files) and the
    bounds of rill's own handshake and frames. Whatever these say, a peer proves it knows the
    run's secret before anything it sends is decoded."""

    ssl_enabled: Annotated[
        bool, msgspec.Meta(description="mutual TLS on every TCP connection between the processes of a run")
    ] = msgspec.field(name="security.ssl.internal.enabled", default=False)
    keystore: Annotated[
        str | None, msgspec.Meta(description="PEM file with this process's certificate (chain) and private key")
    ] = msgspec.field(name="security.ssl.internal.keystore", default=None)
    keystore_password: Annotated[
        str | None, msgspec.Meta(description="password of the keystore's private key when key-password is unset")
    ] = msgspec.field(name="security.ssl.internal.keystore-password", default=None)
    key_password: Annotated[
        str | None, msgspec.Meta(description="password of the keystore's (encrypted) private key")
    ] = msgspec.field(name="security.ssl.internal.key-password", default=None)
    truststore: Annotated[
        str | None, msgspec.Meta(description="PEM file with the certificates (or CA) a peer's certificate must be "
                                             "signed by")
    ] = msgspec.field(name="security.ssl.internal.truststore", default=None)
    truststore_password: Annotated[
        str | None, msgspec.Meta(description="accepted for Flink's configurations; PEM trust stores have none")
    ] = msgspec.field(name="security.ssl.internal.truststore-password", default=None)
    cert_fingerprint: Annotated[
        str | None, msgspec.Meta(description="SHA-1 (or SHA-256) fingerprints, comma-separated, that a peer's "
                                             "certificate must have")
    ] = msgspec.field(name="security.ssl.internal.cert.fingerprint", default=None)
    handshake_timeout: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="a peer that has not proved it belongs to the run this long after "
                                                   "connecting (TLS and the secret) is dropped")
    ] = msgspec.field(name="rill.security.handshake-timeout", default=10_000)
    max_frame_size: Annotated[
        MemoryBytes, msgspec.Meta(ge=1024, le=(1 << 32) - 1, description="largest frame a process accepts from "
                                                                          "another: a larger one drops the connection")
    ] = msgspec.field(name="rill.security.max-frame-size", default=256 << 20)

    def check(self) -> None:
        if self.ssl_enabled and (not self.keystore or not self.truststore):
            raise ValueError("security.ssl.internal.enabled needs security.ssl.internal.keystore and "
                             "security.ssl.internal.truststore (PEM files)")

    def resolved(self) -> dict[str, tuple[object, str]]:
        return {key: (os.path.abspath(path), "relative to the working directory")
                for key, path in (("security.ssl.internal.keystore", self.keystore),
                                  ("security.ssl.internal.truststore", self.truststore))
                if path and not os.path.isabs(path)}

    def absolute(self) -> SecurityOptions:
        """With the stores' paths made absolute (for a process that works elsewhere)."""
        return msgspec.structs.replace(self, **{
            name: os.path.abspath(path) for name, path in (("keystore", self.keystore), ("truststore", self.truststore))
            if path})


KERNEL_SECTIONS: tuple[type[Section], ...] = (RillOptions, EventOptions, CoreOptions, ExecutionOptions,
                                              CheckpointingOptions, StateRecoveryOptions, WorkerOptions,
                                              PythonOptions, SecurityOptions, SqlOptions)
