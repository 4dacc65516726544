"""Checkpointing as the kernel knows it: the configuration (:mod:`.options`), what travels in
band and why checkpoints fail (:mod:`.barriers`, :mod:`.failures`), the versioned format of
snapshots (:mod:`.format`), how operators write and read their state (:mod:`.snapshots`) and
how a checkpoint's state is assigned to restored subtasks (:mod:`.assignment`). The
coordinator, the storage and the barrier handlers are a plugin's (concern ``checkpointing``)."""
