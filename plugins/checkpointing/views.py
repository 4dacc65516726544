"""The views over checkpoint events, in SQL DuckDB and Spark SQL both run (:mod:`kernel.views`).

``checkpoints``: one row per checkpoint of a job (Flink's checkpoint history): ``status``
COMPLETED, FAILED or IN_PROGRESS, ``kind``, when it was triggered (``trigger_s``, seconds since
the run's first event), ``end_to_end_ms`` (to completion or failure), ``state_size`` (bytes; of
the acknowledged subtasks while not complete), ``max_alignment_ms`` over its subtasks,
``processed_bytes`` during alignment and ``persisted_bytes`` of in-flight data over its subtasks,
``unaligned`` (some subtask's barrier overtook in-flight data), how many subtasks acknowledged of
how many, why it failed, where it is.

``checkpoint_subtasks``: one row per subtask's answer to a checkpoint: ACKNOWLEDGED (with its
state size, synchronous and asynchronous parts, alignment, what it processed meanwhile and
what in-flight data it persisted) or DECLINED (with the reason).
"""

from __future__ import annotations

VIEWS: dict[str, str] = {
    "checkpoints": """
        WITH acks AS (
            SELECT run_id, job_id, checkpoint_id, count(*) AS acknowledged, sum(state_size) AS state_size,
                   max(alignment_ms) AS max_alignment_ms, sum(processed_bytes) AS processed_bytes,
                   sum(persisted_bytes) AS persisted_bytes, max(CAST(unaligned AS INT)) = 1 AS unaligned
            FROM rill.ev_checkpoint_acknowledged GROUP BY run_id, job_id, checkpoint_id)
        SELECT t.run_id, t.job_id, t.checkpoint_id,
               CASE WHEN c.checkpoint_id IS NOT NULL THEN 'COMPLETED'
                    WHEN f.checkpoint_id IS NOT NULL THEN 'FAILED' ELSE 'IN_PROGRESS' END AS status,
               t.checkpoint_kind AS kind, t.periodic, (t.time - r.clock_start) / 1e9 AS trigger_s,
               CASE WHEN c.checkpoint_id IS NOT NULL THEN c.duration_ms
                    WHEN f.checkpoint_id IS NOT NULL THEN (f.time - t.time) / 1e6 END AS end_to_end_ms,
               coalesce(c.state_size, a.state_size, 0) AS state_size,
               coalesce(a.max_alignment_ms, 0.0) AS max_alignment_ms, coalesce(a.processed_bytes, 0) AS processed_bytes,
               coalesce(a.persisted_bytes, 0) AS persisted_bytes, coalesce(a.unaligned, false) AS unaligned,
               coalesce(a.acknowledged, 0) AS acknowledged_subtasks, t.tasks_to_acknowledge AS total_subtasks,
               f.reason AS failure_reason, f.message AS failure_message, c.external_path
        FROM rill.ev_checkpoint_triggered t JOIN rill.runs r ON r.run_id = t.run_id
        LEFT JOIN rill.ev_checkpoint_completed c
            ON c.run_id = t.run_id AND c.job_id = t.job_id AND c.checkpoint_id = t.checkpoint_id
        LEFT JOIN rill.ev_checkpoint_failed f
            ON f.run_id = t.run_id AND f.job_id = t.job_id AND f.checkpoint_id = t.checkpoint_id
        LEFT JOIN acks a ON a.run_id = t.run_id AND a.job_id = t.job_id AND a.checkpoint_id = t.checkpoint_id""",
    "checkpoint_subtasks": """
        SELECT a.run_id, a.job_id, a.checkpoint_id, a.vertex_id, a.vertex_name, a.subtask, a.attempt,
               'ACKNOWLEDGED' AS status, (a.time - r.clock_start) / 1e9 AS t_s, a.end_to_end_ms, a.state_size,
               a.sync_ms, a.async_ms, a.alignment_ms, a.processed_records, a.processed_bytes, a.persisted_bytes,
               a.unaligned, a.finished, CAST(NULL AS STRING) AS decline_reason
        FROM rill.ev_checkpoint_acknowledged a JOIN rill.runs r ON r.run_id = a.run_id
        UNION ALL
        SELECT d.run_id, d.job_id, d.checkpoint_id, d.vertex_id, d.vertex_name, d.subtask, d.attempt,
               'DECLINED', (d.time - r.clock_start) / 1e9, CAST(NULL AS DOUBLE), CAST(NULL AS BIGINT),
               CAST(NULL AS DOUBLE), CAST(NULL AS DOUBLE), CAST(NULL AS DOUBLE), CAST(NULL AS BIGINT),
               CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN), CAST(NULL AS BOOLEAN), d.reason
        FROM rill.ev_checkpoint_declined d JOIN rill.runs r ON r.run_id = d.run_id""",
}
