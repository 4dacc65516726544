"""The keys of back-pressure sampling: Flink's ``WebOptions.BACKPRESSURE_*`` (1.11-1.12)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel.config import Section
from kernel.configtypes import DurationMs


class SamplingOptions(Section):
    num_samples: Annotated[int, msgspec.Meta(ge=1, description="samples of each task per back-pressure request")] = (
        msgspec.field(name="web.backpressure.num-samples", default=100)
    )
    delay_between_samples: Annotated[DurationMs, msgspec.Meta(ge=0, description="time between two samples of a task")] = (
        msgspec.field(name="web.backpressure.delay-between-samples", default=50)
    )
    refresh_interval: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="a vertex is sampled again this long after its last request ended")
    ] = msgspec.field(name="web.backpressure.refresh-interval", default=60_000)
