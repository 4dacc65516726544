"""Checkpointing plugins: the JobMaster's checkpoint coordinator, checkpoint storage, and the
barrier handling of tasks' inputs."""
