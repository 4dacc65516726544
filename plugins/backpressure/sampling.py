"""Plugin ``backpressure.sampling``: back pressure as Flink measured it before 1.13 — the
JobMaster has each TaskExecutor sample whether its tasks are back pressured, and judges a
subtask by the share of samples that found it so (:mod:`.tracker`).

Its keys, event and view are also registered by ``backpressure-stats.sampling``, which loads
whichever measure is chosen, so runs recorded with sampling stay readable.
"""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.backpressure.options import SamplingOptions

    register(SamplingOptions)


@hookimpl
def register_event_types(register):
    from plugins.backpressure.events import BackPressureSampled

    register(BackPressureSampled)


@hookimpl
def create_back_pressure_monitor(job, run):
    from plugins.backpressure.options import SamplingOptions
    from plugins.backpressure.tracker import BackPressureStatsTracker

    return BackPressureStatsTracker(job, run.config.section(SamplingOptions))
