"""Plugin ``watermarking.aligned``: the default plugin's generators and valve, plus watermark
alignment across sources (FLIP-182): every source with event time joins an alignment group
(its strategy's ``with_watermark_alignment`` group, else the configured one) and pauses
reading while its watermark would run more than the group's drift ahead of the group's
slowest source."""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel import hookimpl
from kernel.config import Section
from kernel.configtypes import DurationMs
from plugins.watermarking.plugin import create_watermark_generator, create_watermark_valve


class AlignedWatermarkOptions(Section):
    max_drift: Annotated[
        DurationMs, msgspec.Meta(ge=0, description="how far a source's watermark may run ahead of its group's minimum"),
    ] = msgspec.field(name="watermarking.aligned.max-drift", default=1_000)
    update_interval: Annotated[
        DurationMs, msgspec.Meta(ge=1, description="how often sources report and the bound is announced"),
    ] = msgspec.field(name="watermarking.aligned.update-interval", default=1_000)
    group: Annotated[
        str, msgspec.Meta(description="alignment group of sources whose strategy names none"),
    ] = msgspec.field(name="watermarking.aligned.group", default="default")


@hookimpl
def register_config(register):
    register(AlignedWatermarkOptions)


@hookimpl
def register_event_types(register):
    from plugins.watermarking.events import SourceAlignmentChanged, WatermarkAlignmentAnnounced

    register(WatermarkAlignmentAnnounced)
    register(SourceAlignmentChanged)


@hookimpl
def create_watermark_alignment(run):
    from plugins.watermarking.alignment import DefaultWatermarkAlignmentCoordinator

    options = run.config.section(AlignedWatermarkOptions)
    return DefaultWatermarkAlignmentCoordinator(run, options.max_drift, options.update_interval, options.group)


__all__ = ["create_watermark_generator", "create_watermark_valve"]
