"""Back-pressure levels: Flink's web UI thresholds, the one definition every reader uses
(the run summary, the live status line, ``rill metrics``, ``rill replay --at`` and the
``backpressure`` view).

A task is OK while back pressured at most 10 % of the time, LOW up to 50 %, HIGH above.
"""

from __future__ import annotations

#: the largest back-pressured share of time that is still OK
OK_MAX_RATIO = 0.10
#: the largest back-pressured share of time that is still LOW
LOW_MAX_RATIO = 0.5


def back_pressure_level(ratio: float) -> str:
    """The level of a back-pressured share of time (0..1)."""
    return "OK" if ratio <= OK_MAX_RATIO else "LOW" if ratio <= LOW_MAX_RATIO else "HIGH"


def back_pressure_level_of_ms(back_pressured_ms: float) -> str:
    """The level of Flink's ``backPressuredTimeMsPerSecond`` (0..1000)."""
    if back_pressured_ms > 1000 * LOW_MAX_RATIO:
        return "HIGH"
    return "LOW" if back_pressured_ms > 1000 * OK_MAX_RATIO else "OK"


def back_pressure_level_sql(back_pressured_ms: str) -> str:
    """A SQL expression (DuckDB and Spark SQL) of the level of a ``backPressuredTimeMsPerSecond``
    expression; NULL when it is NULL."""
    return (f"CASE WHEN {back_pressured_ms} > {1000 * LOW_MAX_RATIO:g} THEN 'HIGH' "
            f"WHEN {back_pressured_ms} > {1000 * OK_MAX_RATIO:g} THEN 'LOW' "
            f"WHEN {back_pressured_ms} IS NULL THEN NULL ELSE 'OK' END")
