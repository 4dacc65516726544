"""Plugin ``workers.spark``: each TaskExecutor a long-running task on a Spark cluster's
executors (:mod:`.workers`); it needs the realtime clock."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.spark.options import SparkOptions

    register(SparkOptions)


@hookimpl
def create_resource_manager_driver(host, run):
    from plugins.spark.workers import create_driver

    return create_driver(host, run)
