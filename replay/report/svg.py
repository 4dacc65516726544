"""The report's drawings as inline SVG: the job graph, line charts and the task timeline.

Every number drawn is also written on the element (``data-*``), so the page can be checked
against the views it was made from.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

#: Flink's web UI colours (flink-runtime-web, the job graph's node component)
DEFAULT_BACKGROUND, BUSY_BACKGROUND, BACK_PRESSURED_BACKGROUND = "#5db1ff", "#ee6464", "#888888"
DEFAULT_BORDER, BUSY_BORDER, BACK_PRESSURED_BORDER = "#1890ff", "#ee2222", "#000000"

STATE_COLORS = {
    "CREATED": "#d9d9d9", "SCHEDULED": "#bfbfbf", "DEPLOYING": "#91caff", "INITIALIZING": "#69b1ff",
    "RUNNING": "#52c41a", "FINISHED": "#237804", "CANCELING": "#ffd591", "CANCELED": "#fa8c16",
    "FAILED": "#f5222d", "RECONCILING": "#d3adf7",
}
MARKER_COLORS = {"fault": "#cf1322", "heartbeat timeout": "#d46b08", "failure": "#000000", "restart": "#389e0d"}


def _rgb(color: str) -> tuple[int, int, int]:
    value = int(color[1:], 16)
    return (value >> 16) & 255, (value >> 8) & 255, value & 255


def blend(start: str, end: str, share: float) -> str:
    """``start`` moved ``share`` of the way to ``end`` (Flink's UI blend of two colours)."""
    return "#" + "".join(f"{round((b - a) * share + a):02x}" for a, b in zip(_rgb(start), _rgb(end)))


def vertex_colors(busy_pct: float | None, back_pressured_pct: float | None) -> tuple[str, str]:
    """(background, border) of a job vertex as Flink's UI colours it: blue, towards red as it
    is busy, then towards grey/black as it is back-pressured."""
    background, border = DEFAULT_BACKGROUND, DEFAULT_BORDER
    if busy_pct:
        background = blend(background, BUSY_BACKGROUND, busy_pct / 100)
        border = blend(border, BUSY_BORDER, busy_pct / 100)
    if back_pressured_pct:
        background = blend(background, BACK_PRESSURED_BACKGROUND, back_pressured_pct / 100)
        border = blend(border, BACK_PRESSURED_BORDER, back_pressured_pct / 100)
    return background, border


def percent(ms: float | None) -> int | None:
    """Flink's UI percentage of a per-second time: ``min(round(ms / 10), 100)``."""
    if ms is None or ms != ms:  # None or NaN (a legacy source's busy time)
        return None
    return min(round(ms / 10), 100)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


# -- the job graph ---------------------------------------------------------------------------------

BOX_WIDTH, LINE_HEIGHT, COLUMN_GAP, ROW_GAP = 250, 16, 110, 36


def _layers(vertices: list[dict], edges: list[dict]) -> dict[str, int]:
    """Each vertex's column: the length of the longest path from a source to it."""
    depth = {vertex["vertex_id"]: 0 for vertex in vertices}
    for _ in vertices:  # the graph is acyclic: |V| relaxations settle it
        for edge in edges:
            if edge["source"] in depth and edge["target"] in depth:
                depth[edge["target"]] = max(depth[edge["target"]], depth[edge["source"]] + 1)
    return depth


def job_graph(vertices: list[dict], edges: list[dict], initial: dict[str, dict]) -> str:
    """The job graph: a box per job vertex (chained operators, parallelism, level, busy and
    back-pressured %, coloured as Flink's UI), edges labelled with their partitioner.
    ``initial[vertex_id]`` holds what the boxes show first (the run's average)."""
    depth = _layers(vertices, edges)
    heights = {v["vertex_id"]: (len(v["operators"]) + 3) * LINE_HEIGHT + 14 for v in vertices}
    columns: dict[int, list[dict]] = {}
    for vertex in vertices:
        columns.setdefault(depth[vertex["vertex_id"]], []).append(vertex)
    position: dict[str, tuple[float, float]] = {}
    total_height = max((sum(heights[v["vertex_id"]] + ROW_GAP for v in column) for column in columns.values()),
                       default=0)
    for column, members in columns.items():
        used = sum(heights[v["vertex_id"]] + ROW_GAP for v in members)
        y = 20 + (total_height - used) / 2
        for vertex in members:
            position[vertex["vertex_id"]] = (20 + column * (BOX_WIDTH + COLUMN_GAP), y)
            y += heights[vertex["vertex_id"]] + ROW_GAP
    width = 40 + (max(columns, default=0) + 1) * (BOX_WIDTH + COLUMN_GAP) - COLUMN_GAP
    parts = [f'<svg class="job-graph" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{total_height + 20}" viewBox="0 0 {width} {total_height + 20}">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#595959"/></marker></defs>']
    for edge in edges:
        if edge["source"] not in position or edge["target"] not in position:
            continue
        (sx, sy), (tx, ty) = position[edge["source"]], position[edge["target"]]
        x1, y1 = sx + BOX_WIDTH, sy + heights[edge["source"]] / 2
        x2, y2 = tx, ty + heights[edge["target"]] / 2
        middle = (x1 + x2) / 2
        parts.append(f'<g class="edge" data-source="{edge["source"]}" data-target="{edge["target"]}" '
                     f'data-ship-strategy="{escape(edge["ship_strategy"])}">'
                     f'<path d="M {x1:.1f} {y1:.1f} C {middle:.1f} {y1:.1f}, {middle:.1f} {y2:.1f}, {x2:.1f} {y2:.1f}" '
                     'fill="none" stroke="#595959" stroke-width="1.5" marker-end="url(#arrow)"/>'
                     f'<text x="{middle:.1f}" y="{(y1 + y2) / 2 - 6:.1f}" text-anchor="middle" class="edge-label">'
                     f'{escape(edge["ship_strategy"])}</text></g>')
    for vertex in vertices:
        parts.append(_vertex_box(vertex, position[vertex["vertex_id"]], heights[vertex["vertex_id"]],
                                 initial.get(vertex["vertex_id"], {})))
    parts.append("</svg>")
    return "".join(parts)


def _vertex_box(vertex: dict, at: tuple[float, float], height: float, shown: dict) -> str:
    x, y = at
    background, border = vertex_colors(shown.get("busy_pct"), shown.get("back_pressured_pct"))
    lines = [f'<text x="{x + 10}" y="{y + 20 + i * LINE_HEIGHT}" class="operator">{escape(name)}</text>'
             for i, name in enumerate(vertex["operators"] or [vertex["name"]])]
    base = y + 20 + len(vertex["operators"] or [1]) * LINE_HEIGHT
    return (f'<g class="vertex" data-vertex-id="{vertex["vertex_id"]}" data-vertex="{escape(vertex["name"])}" '
            f'data-level="{shown.get("level") or ""}" data-busy-pct="{_data(shown.get("busy_pct"))}" '
            f'data-back-pressured-pct="{_data(shown.get("back_pressured_pct"))}" data-background="{background}">'
            f'<title>{escape(vertex["name"])}</title>'
            f'<rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{height}" rx="6" fill="{background}" '
            f'stroke="{border}" stroke-width="2"/>' + "".join(lines)
            + f'<text x="{x + 10}" y="{base + 2}" class="detail">Parallelism: {vertex["parallelism"]}</text>'
            f'<text x="{x + 10}" y="{base + 2 + LINE_HEIGHT}" class="level">'
            f'<tspan class="level-value">{shown.get("level") or "N/A"}</tspan>'
            f' · busy <tspan class="busy-value">{_percent_text(shown.get("busy_pct"))}</tspan>'
            f' · back pressured <tspan class="bp-value">{_percent_text(shown.get("back_pressured_pct"))}</tspan>'
            '</text></g>')


def _percent_text(value: float | None) -> str:
    return "N/A" if value is None else f"{value:g}%"


def _data(value: Any) -> str:
    return "" if value is None else str(value)


# -- line charts ----------------------------------------------------------------------------------

CHART_WIDTH, CHART_HEIGHT, MARGIN = 340, 160, 40


def line_chart(title: str, seconds: list[int], series: list[tuple[str, str, list]], unit: str, end_s: float,
               y_max: float | None = None, vertex: str = "") -> str:
    """A chart of values per second of a run lasting ``end_s``: ``series`` is (name, colour, values)."""
    values = [v for _, _, ys in series for v in ys if v is not None]
    top = y_max if y_max is not None else max(values, default=0) or 1
    first, last = 0, max(int(end_s), *seconds, 1)
    span = last - first
    plot_w, plot_h = CHART_WIDTH - MARGIN - 10, CHART_HEIGHT - 44 - 20

    def point(second: int, value: float) -> str:
        return f"{MARGIN + (second - first) / span * plot_w:.1f},{20 + plot_h - value / top * plot_h:.1f}"

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
             f'data-vertex="{escape(vertex)}" data-chart="{escape(title)}">',
             f'<text x="{MARGIN}" y="13" class="chart-title">{escape(title)} ({escape(unit)})</text>',
             f'<line x1="{MARGIN}" y1="{20 + plot_h}" x2="{MARGIN + plot_w}" y2="{20 + plot_h}" class="axis"/>',
             f'<line x1="{MARGIN}" y1="20" x2="{MARGIN}" y2="{20 + plot_h}" class="axis"/>',
             f'<text x="{MARGIN - 4}" y="24" text-anchor="end" class="tick">{_fmt(top, 0)}</text>',
             f'<text x="{MARGIN - 4}" y="{20 + plot_h}" text-anchor="end" class="tick">0</text>',
             f'<text x="{MARGIN}" y="{20 + plot_h + 12}" class="tick">{first} s</text>',
             f'<text x="{MARGIN + plot_w}" y="{20 + plot_h + 12}" text-anchor="end" class="tick">{last} s</text>']
    legend_x = MARGIN
    for name, color, ys in series:
        points = " ".join(point(s, v) for s, v in zip(seconds, ys) if v is not None)
        parts.append(f'<polyline class="series" data-series="{escape(name)}" '
                     f'data-seconds="{escape(json.dumps(seconds))}" data-values="{escape(json.dumps(ys))}" '
                     f'points="{points}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        label = name.replace("_ms", "").replace("_", " ")
        parts.append(f'<text x="{legend_x}" y="{CHART_HEIGHT - 6}" class="legend" fill="{color}">— {escape(label)}</text>')
        legend_x += 6 * len(label) + 26
    if not seconds:
        parts.append(f'<text x="{MARGIN + 10}" y="{20 + plot_h / 2}" class="tick">no samples</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- the task timeline ------------------------------------------------------------------------------

ROW, LABEL_WIDTH, TIMELINE_WIDTH = 16, 260, 760


def task_timeline(intervals: list[dict], markers: list[tuple[str, float, str]], duration_s: float) -> str:
    """Execution attempts per subtask as bars by state; ``markers`` are (kind, second, text)."""
    rows: list[tuple[str, int]] = []
    for interval in intervals:
        row = (interval["vertex_name"], interval["subtask"])
        if row not in rows:
            rows.append(row)
    end = max([duration_s, *[i["end_s"] or 0 for i in intervals], *[m[1] for m in markers]], default=1) or 1
    height = 30 + len(rows) * ROW + 30

    def x(second: float) -> float:
        return LABEL_WIDTH + second / end * TIMELINE_WIDTH

    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{LABEL_WIDTH + TIMELINE_WIDTH + 20}" '
             f'height="{height}">',
             f'<text x="{LABEL_WIDTH}" y="{height - 8}" class="tick">0 s</text>',
             f'<text x="{LABEL_WIDTH + TIMELINE_WIDTH}" y="{height - 8}" text-anchor="end" class="tick">'
             f'{end:,.1f} s</text>']
    index = {row: i for i, row in enumerate(rows)}
    for (name, subtask), i in index.items():
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{30 + i * ROW + 11}" text-anchor="end" class="row-label">'
                     f'{escape(name)} ({subtask + 1})</text>')
    for interval in intervals:
        i = index[(interval["vertex_name"], interval["subtask"])]
        start, stop = interval["start_s"], interval["end_s"] if interval["end_s"] is not None else end
        tip = (f'{interval["vertex_name"]} ({interval["subtask"] + 1}) attempt {interval["attempt"]}: '
               f'{interval["state"]} {start:,.3f}-{stop:,.3f} s'
               + (f' on {interval["resource_id"]}' if interval.get("resource_id") else "")
               + (f' - {interval["failure"].splitlines()[0]}' if interval.get("failure") else ""))
        parts.append(f'<rect class="state" data-state="{interval["state"]}" data-attempt="{interval["attempt"]}" '
                     f'x="{x(start):.1f}" y="{30 + i * ROW + 2}" width="{max(x(stop) - x(start), 0.8):.1f}" '
                     f'height="{ROW - 4}" fill="{STATE_COLORS.get(interval["state"], "#8c8c8c")}">'
                     f'<title>{escape(tip)}</title></rect>')
    for kind, second, text in markers:
        parts.append(f'<g class="marker" data-kind="{kind}" data-second="{second}">'
                     f'<line x1="{x(second):.1f}" y1="22" x2="{x(second):.1f}" y2="{30 + len(rows) * ROW}" '
                     f'stroke="{MARKER_COLORS[kind]}" stroke-width="1.5" stroke-dasharray="4 3"/>'
                     f'<title>{escape(f"{kind} at {second:,.3f} s: {text}")}</title></g>')
    parts.append("</svg>")
    return "".join(parts)
