"""Events of the pipelined-region scheduling strategy."""

from __future__ import annotations

from kernel.events import Event


class PipelinedRegionsComputed(Event, tag="pipelined_regions_computed"):
    job_id: str = ""
    regions: int = 0


class RegionScheduled(Event, tag="region_scheduled"):
    job_id: str = ""
    region: int = 0
    execution_vertices: int = 0
