"""Plugin ``backpressure.sampling``: back pressure as Flink measured it before 1.13 — the
JobMaster has each TaskExecutor sample whether its tasks are back pressured, and judges a
subtask by the share of samples that found it so (:mod:`.tracker`).

Its keys, event type and view are registered whichever measure is chosen (as every installed
plugin's), so runs recorded with ``plugins.backpressure = sampling`` are judged by their samples
wherever they are read (``rill metrics``, ``rill report``, what-if comparisons, ``rill sql``).
The view ``backpressure_sampling`` (:func:`kernel.runtime.backpressure.judgement_view`): one row
per subtask result of a request, with its level, and the vertex's ratio and level in that
request (its worst subtask's, as Flink's ``JobVertexBackPressureHandler``).
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
def register_views(register):
    from kernel.runtime.backpressure import back_pressure_level_sql, judgement_view

    register(judgement_view("sampling"), f"""
        SELECT run_id, job_id, vertex_id, vertex_name, request_id, subtask, attempt, started_s, t_s, samples,
               back_pressured_samples, ratio, {back_pressure_level_sql("ratio", full=1)} AS level, vertex_ratio,
               {back_pressure_level_sql("vertex_ratio", full=1)} AS vertex_level
        FROM (SELECT s.run_id, s.job_id, s.vertex_id, s.vertex_name, s.request_id, s.subtask, s.attempt,
                     (s.started - r.clock_start) / 1e9 AS started_s, (s.time - r.clock_start) / 1e9 AS t_s,
                     s.samples, s.back_pressured_samples, s.ratio,
                     max(s.ratio) OVER (PARTITION BY s.run_id, s.vertex_id, s.request_id) AS vertex_ratio
              FROM rill.ev_back_pressure_sampled s JOIN rill.runs r ON r.run_id = s.run_id) x""")


@hookimpl
def create_back_pressure_monitor(job, run):
    from plugins.backpressure.options import SamplingOptions
    from plugins.backpressure.tracker import BackPressureStatsTracker

    return BackPressureStatsTracker(job, run.config.section(SamplingOptions))
