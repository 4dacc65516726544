"""The event of back-pressure sampling (registered by ``backpressure.sampling``, which emits
it and reads it in its view)."""

from __future__ import annotations

from kernel.runtime.cluster_events import TaskEvent


class BackPressureSampled(TaskEvent, tag="back_pressure_sampled"):
    """One subtask's result of a back-pressure request, recorded when the request ended: of the
    ``samples`` its TaskExecutor took from ``started`` on, ``back_pressured_samples`` found the
    task back pressured (``ratio``: their quotient, Flink's back-pressure ratio)."""

    request_id: int = 0
    started: int = 0
    samples: int = 0
    back_pressured_samples: int = 0
    ratio: float = 0.0
