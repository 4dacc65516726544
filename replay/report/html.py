"""The report page: one self-contained HTML file (inline CSS, SVG and script; nothing fetched)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from replay.report.svg import (
    DEFAULT_BACKGROUND,
    DEFAULT_BORDER,
    MARKER_COLORS,
    STATE_COLORS,
    job_graph,
    line_chart,
    percent,
    task_timeline,
    vertex_colors,
)

STYLE = """
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 16px; color: #1f1f1f; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 18px 0 6px; }
h3 { font-size: 14px; margin: 14px 0 4px; }
.runs { display: grid; gap: 24px; } .runs-2 { grid-template-columns: 1fr 1fr; }
.run { min-width: 0; overflow-x: auto; }
table { border-collapse: collapse; margin: 4px 0 10px; } td, th { border: 1px solid #d9d9d9; padding: 2px 6px; }
th { background: #fafafa; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 1px 12px; margin: 0; }
dl.summary dt { color: #595959; } dl.summary dd { margin: 0; }
.status-finished { color: #237804; } .status-failed, .status-crashed { color: #cf1322; }
.graph-control { margin: 6px 0; } .graph-control input { width: 320px; vertical-align: middle; }
svg text { font: 11px system-ui, sans-serif; } svg .operator { font-weight: 600; }
svg .edge-label { fill: #434343; font-size: 10px; } svg .tick, svg .legend { font-size: 10px; fill: #595959; }
svg .axis { stroke: #8c8c8c; } svg .chart-title { font-weight: 600; } svg .row-label { font-size: 10px; }
.charts { display: flex; flex-wrap: wrap; gap: 6px; } .legend-item { margin-right: 10px; white-space: nowrap; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 3px; vertical-align: middle; }
pre { background: #fafafa; padding: 6px; overflow-x: auto; }
"""

SCRIPT = r"""
(function () {
  var data = JSON.parse(document.getElementById('rill-frames').textContent);
  function show(input) {
    var run = input.closest('.run');
    var frames = data[run.dataset.index];
    var second = Number(input.value);
    run.querySelector('.instant-label').textContent = second < 0 ? 'run average' : 'second ' + second;
    run.querySelectorAll('.job-graph .vertex').forEach(function (vertex) {
      var frame = frames[vertex.dataset.vertexId] || {};
      var shown = second < 0 ? frame.average : (frame.seconds || {})[second];
      shown = shown || [frames.defaults[0], frames.defaults[1], null, null, null];
      var rect = vertex.querySelector('rect');
      rect.setAttribute('fill', shown[0]);
      rect.setAttribute('stroke', shown[1]);
      vertex.dataset.level = shown[2] || '';
      vertex.dataset.busyPct = shown[3] === null ? '' : shown[3];
      vertex.dataset.backPressuredPct = shown[4] === null ? '' : shown[4];
      vertex.dataset.background = shown[0];
      vertex.querySelector('.level-value').textContent = shown[2] || 'N/A';
      vertex.querySelector('.busy-value').textContent = shown[3] === null ? 'N/A' : shown[3] + '%';
      vertex.querySelector('.bp-value').textContent = shown[4] === null ? 'N/A' : shown[4] + '%';
    });
  }
  var asked = /(?:^#|&)t=(-?\d+)/.exec(location.hash);  // report.html#t=30 opens at second 30
  document.querySelectorAll('input.instant').forEach(function (input) {
    input.addEventListener('input', function () { show(input); });
    if (asked) { input.value = asked[1]; }
    show(input);
  });
})();
"""


def _table(headers: list[str], rows: list[list[Any]], css: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _cell(value: Any) -> str:
    if value is None:
        return "<td>-</td>"
    if isinstance(value, bool):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (int, float)):
        text = f"{value:,.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"
        return f'<td class="num">{text}</td>'
    return f"<td>{escape(str(value))}</td>"


def _frames(report: dict[str, Any]) -> dict[str, Any]:
    """What the instant control shows per vertex: the run's average (``rill metrics``) and each
    second (the worst subtask, as Flink's UI): [background, border, level, busy %, back pressured %]."""
    frames: dict[str, Any] = {"defaults": [DEFAULT_BACKGROUND, DEFAULT_BORDER]}
    for vertex in report["vertices"]:
        metrics = vertex["metrics"]
        average = [*vertex_colors(metrics.get("busy_pct"), metrics.get("back_pressured_pct")), metrics.get("level"),
                   metrics.get("busy_pct"), metrics.get("back_pressured_pct")]
        seconds = {}
        for second, row in report["instants"].get(vertex["vertex_id"], {}).items():
            busy, back_pressured = percent(row["busy_ms"]), percent(row["back_pressured_ms"])
            seconds[second] = [*vertex_colors(busy, back_pressured), row["level"], busy, back_pressured]
        frames[vertex["vertex_id"]] = {"average": average, "seconds": seconds}
    return frames


def _summary(report: dict[str, Any]) -> str:
    run, summary = report["run"], report["summary"]
    items = [("job", run["job_name"]), ("run", run["run_id"]),
             ("status", f'<span class="status-{escape(run["status"])}">{escape(run["status"])}</span>'),
             ("backend", run["backend"]), ("back pressure judged by", run["back_pressure_measure"]),
             ("clock", run["clock"]), ("seed", run["seed"]),
             ("duration", f'{run["duration_s"]:,.3f} s'), ("events", f'{run["events"]:,}'),
             ("failures", summary["failures"]), ("restarts", summary["restarts"]),
             ("late records dropped", summary["late_records_dropped"]), ("job file", run["job_file"] or "-")]
    body = "".join(f"<dt>{escape(k)}</dt><dd>{v if k == 'status' else escape(str(v))}</dd>" for k, v in items)
    return f'<dl class="summary">{body}</dl>'


def _graph(report: dict[str, Any]) -> str:
    last = max((second for rows in report["instants"].values() for second in rows), default=0)
    initial = {v["vertex_id"]: v["metrics"] for v in report["vertices"]}
    control = (f'<div class="graph-control"><label>instant <input class="instant" type="range" min="-1" '
               f'max="{last}" step="1" value="-1"></label> <output class="instant-label">run average</output>'
               ' <span class="hint">(left: the run\'s average as <code>rill metrics</code>; '
               'then each second: the worst subtask, as Flink\'s UI)</span></div>')
    return control + job_graph(report["vertices"], report["edges"], initial)


def _vertex_table(report: dict[str, Any]) -> str:
    columns = [("vertex", "vertex"), ("p", "parallelism"), ("busy %", "busy_pct"), ("idle %", "idle_pct"),
               ("back pressured %", "back_pressured_pct"), ("level", "level"), ("records in", "records_in"),
               ("records out", "records_out"), ("in/s", "records_in_per_s"), ("out/s", "records_out_per_s"),
               ("watermark lag ms", "watermark_lag_ms"), ("late", "late_records_dropped"),
               ("failures", "failures"), ("restarts", "restarts")]
    if any("sampled_pct" in v["metrics"] for v in report["vertices"]):  # judged by sampling
        columns.insert(5, ("sampled %", "sampled_pct"))
    rows = [[v["metrics"].get(key) for _, key in columns] for v in report["vertices"] if v["metrics"]]
    return _table([title for title, _ in columns], rows, "vertex-metrics")


def _charts(report: dict[str, Any]) -> str:
    parts = []
    end = report["run"]["duration_s"]
    for vertex in report["vertices"]:
        series = report["series"].get(vertex["vertex_id"], {})
        seconds = series.get("second", [])
        lag = report["watermark_lag"].get(vertex["vertex_id"], {"second": [], "lag_ms": []})
        name = vertex["name"]
        parts.append(f'<h3>{escape(name)}</h3><div class="charts" data-vertex="{escape(name)}">'
                     + line_chart("time per second", seconds, [
                         ("busy_ms", "#d4380d", series.get("busy_ms", [])),
                         ("idle_ms", "#1677ff", series.get("idle_ms", [])),
                         ("back_pressured_ms", "#434343", series.get("back_pressured_ms", []))],
                         "ms, mean of subtasks", end, y_max=1000, vertex=name)
                     + line_chart("records per second", seconds, [
                         ("records_in", "#389e0d", series.get("records_in", [])),
                         ("records_out", "#722ed1", series.get("records_out", []))], "records", end, vertex=name)
                     + line_chart("watermark lag", lag["second"], [("lag_ms", "#08979c", lag["lag_ms"])], "ms", end,
                                  vertex=name)
                     + "</div>")
    return "".join(parts)


#: colours of the subtasks' lines in a user metric's chart
SUBTASK_COLORS = ("#1677ff", "#d4380d", "#389e0d", "#722ed1", "#08979c", "#d48806", "#c41d7f", "#434343")


def _user_metrics(report: dict[str, Any]) -> str:
    """The user metrics as each subtask ended them (``rill metrics``), then a chart per metric:
    its value at every sample, a line per subtask."""
    if not report["user_metrics"]:
        return "<p>No user metrics.</p>"
    columns = ["vertex", "subtask", "attempt", "operator", "metric", "kind", "value", "count", "sum", "min", "max",
               "error"]
    parts = [_table(columns, [[row[c] for c in columns] for row in report["user_metrics"]], "user-metrics"),
             '<div class="charts">']
    end = report["run"]["duration_s"]
    for chart in report["user_metric_series"]:
        times = sorted({t for line in chart["subtasks"].values() for t in line["t_s"]})
        series = []
        for subtask, line in sorted(chart["subtasks"].items()):
            at = dict(zip(line["t_s"], line["value"]))
            series.append((f"subtask {subtask}", SUBTASK_COLORS[subtask % len(SUBTASK_COLORS)],
                           [at.get(t) for t in times]))
        unit = "meter, events per second" if chart["kind"] == "meter" else chart["kind"]
        parts.append(line_chart(f'{chart["operator"]}: {chart["metric"]}', times, series, unit, end,
                                vertex=chart["vertex"]))
    return "".join(parts) + "</div>"


def _markers(report: dict[str, Any]) -> list[tuple[str, float, str]]:
    markers = []
    for failure in report["failures"]:
        if failure["fault_s"] is not None:
            markers.append(("fault", failure["fault_s"], failure["fault"] or failure["fault_kind"] or "fault"))
        if failure["failed_s"] is not None:
            where = f'{failure["vertex_name"]} ({(failure["subtask"] or 0) + 1})'
            markers.append(("failure", failure["failed_s"], f'{where}: {failure["cause"]}'))
        if failure["restarted_s"] is not None:
            markers.append(("restart", failure["restarted_s"], f'restart #{failure["restart_number"]}'))
    for timeout in report["heartbeat_timeouts"]:
        markers.append(("heartbeat timeout", timeout["t_s"],
                        f'{timeout["owner"]} lost {timeout["target"]} ({timeout["silent_ms"]:,.0f} ms silent)'))
    return sorted(markers, key=lambda marker: marker[1])


def _legend() -> str:
    states = "".join(f'<span class="legend-item"><span class="swatch" style="background:{color}"></span>{state}</span>'
                     for state, color in STATE_COLORS.items())
    markers = "".join(f'<span class="legend-item"><span class="swatch" style="background:{color}"></span>{kind}'
                      "</span>" for kind, color in MARKER_COLORS.items())
    return f"<div>{states}</div><div>{markers}</div>"


def _failures(report: dict[str, Any]) -> str:
    if not report["failures"]:
        return "<p>No failures.</p>"
    columns = ["fault_kind", "fault", "fault_s", "detected_s", "failed_s", "vertex_name", "subtask", "attempt",
               "cause", "restart", "restart_number", "restarted_s", "recovered_s"]
    return _table(columns, [[row[c] for c in columns] for row in report["failures"]], "failures")


def _heartbeats(report: dict[str, Any]) -> str:
    if not report["heartbeats"]:
        return "<p>No heartbeats recorded.</p>"
    columns = list(report["heartbeats"][0])
    return _table(columns, [[row[c] for c in columns] for row in report["heartbeats"]], "heartbeats")


def _checkpoints(report: dict[str, Any]) -> str:
    """Flink's checkpoint tab: counts, the latest completed checkpoint, savepoint, failure and
    restore, and the history."""
    checkpoints = report["checkpoints"]
    if checkpoints is None:
        return "<p>No checkpoints.</p>"
    counts = checkpoints["counts"]
    parts = [_table(["triggered", "in progress", "completed", "failed", "restored"],
                    [[counts[key] for key in ("triggered", "in_progress", "completed", "failed", "restored")]],
                    "checkpoint-counts")]
    latest = []
    for title, key in (("latest completed checkpoint", "latest_completed"), ("latest savepoint", "latest_savepoint")):
        row = checkpoints[key]
        latest.append([title, None if row is None else row["checkpoint_id"], None if row is None else row["trigger_s"],
                       None if row is None else row["end_to_end_ms"], None if row is None else row["state_size"],
                       None if row is None else (row["external_path"] or "JobMaster memory")])
    failed, restore = checkpoints["latest_failed"], checkpoints["latest_restore"]
    latest.append(["latest failed", None if failed is None else failed["checkpoint_id"],
                   None if failed is None else failed["trigger_s"], None if failed is None else failed["end_to_end_ms"],
                   None, None if failed is None else f'{failed["failure_reason"]}: {failed["failure_message"]}'])
    latest.append(["latest restore", None if restore is None else restore["checkpoint_id"],
                   None if restore is None else restore["restored_s"], None,
                   None if restore is None else restore["state_size"],
                   None if restore is None else f'{restore["kind"]} {restore["external_path"] or "(JobMaster memory)"}'])
    parts.append(_table(["", "id", "time s", "end to end ms", "state size", "path / cause"], latest,
                        "checkpoint-latest"))
    columns = [("id", "checkpoint_id"), ("status", "status"), ("kind", "kind"), ("trigger time s", "trigger_s"),
               ("end to end ms", "end_to_end_ms"), ("state size", "state_size"),
               ("max alignment ms", "max_alignment_ms"), ("acknowledged", None), ("failure", "failure_reason")]
    rows = [[f'{row["acknowledged_subtasks"]}/{row["total_subtasks"]}' if key is None else row[key]
             for _, key in columns] for row in checkpoints["history"]]
    parts.append("<h3>History</h3>" + _table([title for title, _ in columns], rows, "checkpoint-history"))
    return "".join(parts)


def _config(report: dict[str, Any]) -> str:
    plugins = _table(["concern", "plugin"], [[k, v] for k, v in sorted(report["plugins"].items())], "plugins")
    config = _table(["key", "value"], [[k, json.dumps(v) if not isinstance(v, str) else v]
                                       for k, v in sorted(report["config"].items())], "config")
    return f"<h3>Plugins</h3>{plugins}<h3>Configuration</h3>{config}"


def _run_section(report: dict[str, Any], index: int) -> str:
    run = report["run"]
    return (f'<section class="run" data-index="{index}" data-run-id="{run["run_id"]}">'
            f'<h2>{escape(run["job_name"])} — run {run["run_id"]}</h2>{_summary(report)}'
            f"<h2>Job graph</h2>{_graph(report)}{_vertex_table(report)}"
            f"<h2>Per vertex</h2>{_charts(report)}"
            f"<h2>User metrics</h2>{_user_metrics(report)}"
            f"<h2>Task timeline</h2>{_legend()}"
            f'{task_timeline(report["timeline"], _markers(report), report["run"]["duration_s"])}'
            f"<h2>Failures and restarts</h2>{_failures(report)}"
            f"<h2>Checkpoints</h2>{_checkpoints(report)}"
            f"<h2>Heartbeats</h2>{_heartbeats(report)}"
            f"<h2>Run</h2>{_config(report)}</section>")


def _comparison(comparison: dict[str, Any]) -> str:
    from replay.compare import format_figure

    rows = [[name, format_figure(a), format_figure(b)] for name, a, b in comparison["figures"]]
    out = comparison["output"]
    same = out["only_recorded"] == 0 and out["only_rerun"] == 0
    printed = (f'print output: {out["lines_recorded"]:,} lines in {comparison["recorded"]}, {out["lines_rerun"]:,} in '
               f'{comparison["rerun"]}; ' + ("identical" if same else f'{out["only_recorded"]:,} only in the first, '
                                             f'{out["only_rerun"]:,} only in the second'))
    return (f'<section class="comparison"><h2>Comparison</h2>'
            f'{_table(["", comparison["recorded"], comparison["rerun"]], rows, "comparison")}'
            f"<p>{escape(printed)}</p></section>")


def render_report(reports: list[dict[str, Any]], comparison: dict[str, Any] | None = None) -> str:
    """The page of one run, or of two side by side with their comparison."""
    title = " vs ".join(f'{r["run"]["job_name"]} ({r["run"]["run_id"]})' for r in reports)
    frames = json.dumps([_frames(report) for report in reports], default=str).replace("</", "<\\/")
    sections = "".join(_run_section(report, index) for index, report in enumerate(reports))
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rill report: {escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>rill report: {escape(title)}</h1>"
            + (_comparison(comparison) if comparison else "")
            + f'<div class="runs runs-{len(reports)}">{sections}</div>'
            f'<script id="rill-frames" type="application/json">{frames}</script>'
            f"<script>{SCRIPT}</script></body></html>\n")
