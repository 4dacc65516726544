"""Checkpointing as the kernel knows it: the configuration (:mod:`.options`), what tasks
report and why checkpoints fail (:mod:`.messages`, :mod:`.failures`), the versioned format of
snapshots (:mod:`.format`), how operators write and read their state (:mod:`.snapshots`), the
in-flight data of unaligned checkpoints (:mod:`.channel_state`) and how a checkpoint's state is
assigned to restored subtasks (:mod:`.assignment`). The barriers themselves are stream elements
(:mod:`kernel.runtime.streaming.elements`). The coordinator, the storage and the barrier handlers are
plugins' (concerns ``checkpointing`` and ``barrier-handling``)."""
