"""Plugin ``barrier-handling.unaligned``: unaligned checkpoints (Flink's unaligned
``SingleCheckpointBarrierHandler``). A task's input handles barriers unaligned when
``execution.checkpointing.unaligned.enabled`` is true and the mode is EXACTLY_ONCE — from
the start, or once ``execution.checkpointing.aligned-checkpoint-timeout`` has passed since the
checkpoint was triggered; otherwise it leaves barrier handling to the ``checkpointing``
plugin's aligned and at-least-once handlers."""

from kernel import hookimpl


@hookimpl
def create_checkpoint_barrier_handler(task, channels, run):
    from kernel.runtime.checkpointing.options import CheckpointingOptions

    if not run.config.section(CheckpointingOptions).unaligned_enabled:
        return None
    from plugins.checkpointing.unaligned_barriers import UnalignedBarrierHandler

    return UnalignedBarrierHandler(task, channels, run)
