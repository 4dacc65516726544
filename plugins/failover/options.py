"""Flink's restart-strategy and failover-strategy keys, with Flink's defaults."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs

RESTART_TYPES = {
    "none": "none", "off": "none", "disable": "none",
    "fixed-delay": "fixed-delay", "fixeddelay": "fixed-delay",
    "failure-rate": "failure-rate", "failurerate": "failure-rate",
    "exponential-delay": "exponential-delay", "exponentialdelay": "exponential-delay",
}


class RestartOptions(Section):
    deprecated_keys = {"restart-strategy": "restart-strategy.type"}

    type: Annotated[
        str, msgspec.Meta(description="none|off|disable, fixed-delay, failure-rate, exponential-delay; unset: "
                                      "exponential-delay when the job checkpoints, else no restarts")
    ] = msgspec.field(name="restart-strategy.type", default="")
    fixed_delay_attempts: Annotated[int, msgspec.Meta(ge=0)] = msgspec.field(
        name="restart-strategy.fixed-delay.attempts", default=1)
    fixed_delay_delay: Annotated[DurationMs, msgspec.Meta(ge=0)] = msgspec.field(
        name="restart-strategy.fixed-delay.delay", default=1_000)
    failure_rate_max_failures: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(
        name="restart-strategy.failure-rate.max-failures-per-interval", default=1)
    failure_rate_interval: Annotated[DurationMs, msgspec.Meta(ge=1)] = msgspec.field(
        name="restart-strategy.failure-rate.failure-rate-interval", default=60_000)
    failure_rate_delay: Annotated[DurationMs, msgspec.Meta(ge=0)] = msgspec.field(
        name="restart-strategy.failure-rate.delay", default=1_000)
    exponential_initial_backoff: Annotated[DurationMs, msgspec.Meta(ge=1)] = msgspec.field(
        name="restart-strategy.exponential-delay.initial-backoff", default=1_000)
    exponential_max_backoff: Annotated[DurationMs, msgspec.Meta(ge=1)] = msgspec.field(
        name="restart-strategy.exponential-delay.max-backoff", default=60_000)
    exponential_multiplier: Annotated[float, msgspec.Meta(gt=1.0)] = msgspec.field(
        name="restart-strategy.exponential-delay.backoff-multiplier", default=1.5)
    exponential_reset_threshold: Annotated[DurationMs, msgspec.Meta(ge=1)] = msgspec.field(
        name="restart-strategy.exponential-delay.reset-backoff-threshold", default=3_600_000)
    exponential_jitter: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = msgspec.field(
        name="restart-strategy.exponential-delay.jitter-factor", default=0.1)
    exponential_attempts: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(
        name="restart-strategy.exponential-delay.attempts-before-reset-backoff", default=2147483647)
    failover_strategy: Annotated[Literal["region", "full"], msgspec.Meta(description="region (default) or full")] = (
        msgspec.field(name="jobmanager.execution.failover-strategy", default="region"))

    def check(self) -> None:
        if self.type and self.type.lower() not in RESTART_TYPES:
            raise ValueError(f"restart-strategy.type: unknown strategy {self.type!r} "
                             f"(none, fixed-delay, failure-rate, exponential-delay)")
        if self.exponential_initial_backoff > self.exponential_max_backoff:
            raise ValueError("restart-strategy.exponential-delay.initial-backoff cannot be higher than max-backoff")

    @property
    def restart_type(self) -> str:
        return RESTART_TYPES[self.type.lower()] if self.type else "none"
