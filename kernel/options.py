"""Config sections the kernel itself reads. Flink's key names where Flink has the setting;
rill's own settings under ``rill.``."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs


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


KERNEL_SECTIONS: tuple[type[Section], ...] = (RillOptions, EventOptions, CoreOptions)
