"""Figures of a run for comparing two runs side by side (what-if re-executions, reports)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kernel.clock import MAX_LONG
from replay.backpressure import judgement
from replay.metrics import run_metrics, vertex_metrics


def printed_lines(con: Any, run_id: str) -> Counter:
    """What the run's print sinks wrote, as a multiset of lines."""
    lines: Counter = Counter()
    for (text,) in con.execute("SELECT text FROM rill.ev_sink_output_printed WHERE run_id = $run ORDER BY seq",
                               {"run": run_id}).fetchall():
        lines.update(text.splitlines())
    return lines


def source_skew_ms(con: Any, run_id: str) -> float | None:
    """The largest difference between the watermarks of the job's timestamp-assigning tasks
    (its sources) while all of them run; None with fewer than two."""
    rows = con.execute(
        "SELECT vertex_id, subtask, watermark FROM rill.ev_watermark_advanced WHERE run_id = $run "
        "AND direction = 'output' AND event_time IS NOT NULL ORDER BY seq", {"run": run_id}).fetchall()
    keys = {(vertex, subtask) for vertex, subtask, _ in rows}
    latest: dict[tuple[str, int], int] = {}
    worst = None
    for vertex, subtask, watermark in rows:
        if watermark == MAX_LONG:
            break
        latest[(vertex, subtask)] = watermark
        if len(keys) > 1 and len(latest) == len(keys):
            skew = max(latest.values()) - min(latest.values())
            worst = skew if worst is None else max(worst, skew)
    return worst


def figures(con: Any, run: Any) -> dict[str, Any]:
    totals = run_metrics(con, run.run_id)
    lag = con.execute("SELECT max(lag_event_time_ms) FROM watermarks WHERE run_id = $run AND direction = 'input'",
                      {"run": run.run_id}).fetchone()[0]
    detections = [round(d, 3) for (d,) in con.execute(
        "SELECT detected_s - fault_s FROM failures WHERE run_id = $run AND fault_s IS NOT NULL AND detected_s IS NOT NULL "
        "ORDER BY fault_s", {"run": run.run_id}).fetchall()]
    return {
        "run_id": run.run_id, "status": run.status, "clock": run.clock, "duration_s": round(run.duration_s, 3),
        "events": run.events, "failures": totals["failures"], "restarts": totals["restarts"],
        "late_records_dropped": totals["late_records_dropped"], "max_watermark_lag_ms": lag,
        "max_source_watermark_skew_ms": source_skew_ms(con, run.run_id), "detection_latency_s": detections,
        "back_pressure_measure": judgement(con, run.run_id).measure,
        "vertices": {row["vertex"]: row for row in vertex_metrics(con, run.run_id)},
        "printed": printed_lines(con, run.run_id),
    }


def compare(old: dict[str, Any], new: dict[str, Any], examples: int = 5) -> dict[str, Any]:
    only_old = old["printed"] - new["printed"]
    only_new = new["printed"] - old["printed"]
    rows = [(name, old[name], new[name]) for name in (
        "status", "duration_s", "failures", "restarts", "late_records_dropped", "max_watermark_lag_ms",
        "max_source_watermark_skew_ms", "detection_latency_s", "back_pressure_measure")]
    for vertex in [*old["vertices"], *(name for name in new["vertices"] if name not in old["vertices"])]:
        a, b = old["vertices"].get(vertex, {}), new["vertices"].get(vertex, {})
        rows.append((f"{vertex}: busy %", a.get("busy_pct"), b.get("busy_pct")))
        rows.append((f"{vertex}: back pressured %", a.get("back_pressured_pct"), b.get("back_pressured_pct")))
        if "sampled_pct" in a or "sampled_pct" in b:
            rows.append((f"{vertex}: sampled %", a.get("sampled_pct"), b.get("sampled_pct")))
        rows.append((f"{vertex}: back-pressure level", a.get("level"), b.get("level")))
    return {
        "recorded": old["run_id"], "rerun": new["run_id"], "figures": rows,
        "output": {"lines_recorded": sum(old["printed"].values()), "lines_rerun": sum(new["printed"].values()),
                   "only_recorded": sum(only_old.values()), "only_rerun": sum(only_new.values()),
                   "examples_only_recorded": sorted(only_old)[:examples],
                   "examples_only_rerun": sorted(only_new)[:examples]},
    }


def render_comparison(comparison: dict[str, Any]) -> str:
    from kernel.cli.common import format_table

    lines = [f"recorded run {comparison['recorded']} vs re-execution {comparison['rerun']}"]
    rows = [(name, format_figure(a), format_figure(b)) for name, a, b in comparison["figures"]]
    lines.append(format_table(["", "recorded", "rerun"], rows))
    out = comparison["output"]
    same = out["only_recorded"] == 0 and out["only_rerun"] == 0
    lines.append(f"output: {out['lines_recorded']} lines recorded, {out['lines_rerun']} re-executed; "
                 + ("identical" if same else f"{out['only_recorded']} only in the recording, {out['only_rerun']} only "
                                             "in the re-execution"))
    for title, key in (("only recorded", "examples_only_recorded"), ("only re-executed", "examples_only_rerun")):
        for line in out[key]:
            lines.append(f"  {title}: {line}")
    return "\n".join(lines)


def format_figure(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    if isinstance(value, list):
        return ", ".join(format_figure(v) for v in value) or "-"
    return str(value)
