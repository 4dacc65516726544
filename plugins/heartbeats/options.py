"""Flink's heartbeat keys (read by every heartbeat plugin)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs


class HeartbeatOptions(Section):
    interval: Annotated[DurationMs, msgspec.Meta(ge=1, description="how often a sender requests heartbeats")] = (
        msgspec.field(name="heartbeat.interval", default=10_000)
    )
    timeout: Annotated[DurationMs, msgspec.Meta(ge=1, description="a target not heard from this long is lost")] = (
        msgspec.field(name="heartbeat.timeout", default=50_000)
    )
    rpc_failure_threshold: Annotated[
        int, msgspec.Meta(ge=-1, description="consecutive failed heartbeat messages that make a target unreachable (-1: off)")
    ] = msgspec.field(name="heartbeat.rpc-failure-threshold", default=2)

    def check(self) -> None:
        if self.timeout < self.interval:
            raise ValueError(f"heartbeat.timeout ({self.timeout} ms) must not be smaller than heartbeat.interval "
                             f"({self.interval} ms)")
        if self.rpc_failure_threshold == 0:
            raise ValueError("heartbeat.rpc-failure-threshold must be positive or -1 (disabled)")
