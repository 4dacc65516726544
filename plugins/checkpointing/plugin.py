"""Plugin ``checkpointing.default``: Flink's CheckpointCoordinator with its storage and
retention, and the barrier handlers of tasks' inputs (aligned for EXACTLY_ONCE, a tracker
for AT_LEAST_ONCE; unaligned checkpoints are a ``barrier-handling`` plugin's); events of every
checkpoint and the views ``checkpoints`` and ``checkpoint_subtasks`` over them."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.checkpointing.options import CheckpointStorageOptions

    register(CheckpointStorageOptions)


@hookimpl
def register_event_types(register):
    from plugins.checkpointing.events import CHECKPOINT_EVENT_TYPES

    for event_type in CHECKPOINT_EVENT_TYPES:
        register(event_type)


@hookimpl
def register_views(register):
    from plugins.checkpointing.views import VIEWS

    for name, select in VIEWS.items():
        register(name, select)


@hookimpl
def create_checkpoint_coordinator(context, run):
    from kernel.runtime.checkpointing.options import CheckpointingOptions
    from kernel.errors import PluginError
    from plugins.checkpointing.coordinator import DefaultCheckpointCoordinator

    handlers = run.plugin_manager.hook.create_checkpoint_barrier_handler.get_hookimpls()
    if run.config.section(CheckpointingOptions).unaligned_enabled and all(
            impl.function is create_checkpoint_barrier_handler for impl in handlers):
        raise PluginError("execution.checkpointing.unaligned.enabled: no loaded plugin handles unaligned barriers "
                          "(concern barrier-handling, e.g. barrier-handling.unaligned)")
    return DefaultCheckpointCoordinator(context, run)


@hookimpl(trylast=True)
def create_checkpoint_barrier_handler(task, channels, run):
    from kernel.runtime.checkpointing.options import CheckpointingOptions
    from plugins.checkpointing.barriers import AlignedBarrierHandler, CheckpointBarrierTracker

    aligned = run.config.section(CheckpointingOptions).mode == "EXACTLY_ONCE"
    return (AlignedBarrierHandler if aligned else CheckpointBarrierTracker)(task, channels, run)
