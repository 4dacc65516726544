"""Events of watermark alignment (plugin ``watermarking.aligned``)."""

from __future__ import annotations

from kernel.events import Event


class WatermarkAlignmentAnnounced(Event, tag="watermark_alignment_announced"):
    """The coordinator announced an alignment group's bound: ``min_watermark`` over the
    reports of ``members`` reporting members, ``max_allowed_watermark`` = min + drift."""

    group: str = ""
    members: int = 0
    min_watermark: int = 0
    max_allowed_watermark: int = 0


class SourceAlignmentChanged(Event, tag="source_alignment_changed"):
    """A source subtask started (``waiting``) or stopped waiting for alignment at its
    ``watermark``, under the announced ``max_allowed_watermark``."""

    group: str = ""
    vertex_id: str = ""
    vertex_name: str = ""
    subtask: int = 0
    attempt: int = 0
    waiting: bool = False
    watermark: int = 0
    max_allowed_watermark: int = 0
