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


KERNEL_SECTIONS: tuple[type[Section], ...] = (RillOptions, EventOptions)
