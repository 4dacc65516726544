"""Plugin ``backend.spark``: run bounded jobs on Spark through PySpark (BATCH semantics)."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.spark.options import SparkOptions

    register(SparkOptions)


@hookimpl
def register_event_types(register):
    from plugins.spark.events import SparkStageCompleted

    register(SparkStageCompleted)


@hookimpl
def create_execution_backend(config):
    from plugins.spark.backend import SparkBackend

    return SparkBackend(config)
