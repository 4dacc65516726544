"""Flink's heartbeat keys (read by every heartbeat plugin) and the phi-accrual detector's."""

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


class PhiAccrualOptions(Section):
    threshold: Annotated[float, msgspec.Meta(gt=0, description="phi at which a target is declared lost")] = (
        msgspec.field(name="heartbeats.phi-accrual.threshold", default=8.0)
    )
    max_sample_size: Annotated[int, msgspec.Meta(ge=1, description="heartbeat intervals remembered")] = (
        msgspec.field(name="heartbeats.phi-accrual.max-sample-size", default=1000)
    )
    min_std_deviation: Annotated[DurationMs, msgspec.Meta(ge=1, description="smallest standard deviation assumed")] = (
        msgspec.field(name="heartbeats.phi-accrual.min-std-deviation", default=100)
    )
    acceptable_pause: Annotated[DurationMs, msgspec.Meta(ge=0, description="silence tolerated on top of the mean interval")] = (
        msgspec.field(name="heartbeats.phi-accrual.acceptable-heartbeat-pause", default=10_000)
    )
    first_estimate: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="assumed interval before any is observed (0: heartbeat.interval)")
    ] = msgspec.field(name="heartbeats.phi-accrual.first-heartbeat-estimate", default=0)
