"""Events of the spark backend."""

from __future__ import annotations

from kernel.events import Event


class SparkStageCompleted(Event, tag="spark_stage_completed"):
    """The Spark job computing job vertex ``vertex_id`` completed: its Spark job id, stage ids
    and number of tasks (one per subtask, plus those of shuffle-map stages)."""

    job_id: str = ""
    vertex_id: str = ""
    vertex_name: str = ""
    spark_job_id: int = 0
    stage_ids: list[int] = []
    tasks: int = 0
    duration_ms: float = 0.0
