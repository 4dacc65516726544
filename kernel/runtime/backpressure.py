"""Back-pressure levels: Flink's web UI thresholds, the one definition every reader uses
(the run summary, the live status line, ``rill metrics``, ``rill replay --at``, the
``backpressure`` view and the views of other measures).

A task is OK while back pressured at most 10 % of the time (or of the samples), LOW up to
50 %, HIGH above; a vertex has the level of its worst subtask.

How back pressure is measured is a concern (``plugins.backpressure``). The default,
:data:`MAILBOX_TIMING`, is the task metrics' back-pressured time (the mailbox's TimerGauges).
Another measure publishes its judgement in the view :func:`judgement_view` names, which
readers of a run recorded with that measure take the level from.
"""

from __future__ import annotations

#: the largest back-pressured share of time that is still OK
OK_MAX_RATIO = 0.10
#: the largest back-pressured share of time that is still LOW
LOW_MAX_RATIO = 0.5

#: the default measure: ``backPressuredTimeMsPerSecond`` of every task (Flink's since 1.13)
MAILBOX_TIMING = "mailbox-timing"


def back_pressure_level(ratio: float) -> str:
    """The level of a back-pressured share of time (0..1)."""
    return "OK" if ratio <= OK_MAX_RATIO else "LOW" if ratio <= LOW_MAX_RATIO else "HIGH"


def back_pressure_level_of_ms(back_pressured_ms: float) -> str:
    """The level of Flink's ``backPressuredTimeMsPerSecond`` (0..1000)."""
    if back_pressured_ms > 1000 * LOW_MAX_RATIO:
        return "HIGH"
    return "LOW" if back_pressured_ms > 1000 * OK_MAX_RATIO else "OK"


def back_pressure_level_sql(back_pressured: str, full: float = 1000) -> str:
    """A SQL expression (DuckDB and Spark SQL) of the level of a ``backPressuredTimeMsPerSecond``
    expression (``full`` 1000), or of a ratio (``full`` 1); NULL when it is NULL."""
    return (f"CASE WHEN {back_pressured} > {full * LOW_MAX_RATIO:g} THEN 'HIGH' "
            f"WHEN {back_pressured} > {full * OK_MAX_RATIO:g} THEN 'LOW' "
            f"WHEN {back_pressured} IS NULL THEN NULL ELSE 'OK' END")


def judgement_view(measure: str) -> str:
    """The view in which a measure other than :data:`MAILBOX_TIMING` (the name of its plugin of
    concern ``backpressure``) publishes its judgement: ``backpressure_<measure>``, ``-`` as ``_``.

    One row per result of a subtask, with at least ``run_id``, ``vertex_id``, ``vertex_name``,
    ``subtask``, ``t_s`` (when the result was known, seconds since the run's start),
    ``samples``, ``back_pressured_samples``, ``ratio`` (their quotient) and ``level``. A
    subtask's share over a run is its back-pressured samples over its samples; a vertex's
    level is its worst subtask's."""
    return "backpressure_" + measure.replace("-", "_")
