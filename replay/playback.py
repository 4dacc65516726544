"""Playing a recorded run's events back in order (``rill replay RUN --events``).

The filtering and the formatting of each line happen in DuckDB; each block of lines arrives as
one Arrow string column whose bytes are written out as they are, so playback runs at the
speed of the log rather than of a Python loop per event.
"""

from __future__ import annotations

from typing import Any, BinaryIO

BLOCK = 65_536


def play(con: Any, run: Any, out: BinaryIO, kinds: tuple[str, ...] = (), task: str | None = None,
         start_s: float | None = None, end_s: float | None = None) -> int:
    """Write the run's events as UTF-8 lines ``seconds seq kind payload``; returns how many."""
    where = ["run_id = $run"]
    params: dict[str, Any] = {"run": run.run_id, "origin": run.clock_start}
    if kinds:
        where.append("list_contains($kinds, kind)")
        params["kinds"] = list(kinds)
    if task:
        where.append("contains(payload::VARCHAR, $task)")
        params["task"] = task
    if start_s is not None:
        where.append("time >= $start")
        params["start"] = run.at(start_s)
    if end_s is not None:
        where.append("time <= $end")
        params["end"] = run.at(end_s)
    query = f"""
        SELECT printf('%12.6f %8d  %-32s %s', (time - $origin) / 1e9, seq, kind, payload::VARCHAR) || chr(10) AS line
        FROM rill.events WHERE {' AND '.join(where)} ORDER BY seq"""
    import pyarrow as pa

    reader = con.sql(query, params=params).to_arrow_reader(BLOCK)
    count = 0
    for batch in reader:
        lines = batch.column(0)
        if len(lines):
            _, offsets, data = lines.buffers()
            positions = memoryview(offsets).cast("q" if lines.type == pa.large_string() else "i")
            start, end = positions[lines.offset], positions[lines.offset + len(lines)]
            out.write(memoryview(data)[start:end])
            count += len(lines)
    return count
