"""Plugin ``workers.processes``: each TaskExecutor an OS process on this machine
(:class:`~plugins.workers.processes.ProcessDriver`); it needs the realtime clock."""

from kernel import hookimpl


@hookimpl
def create_resource_manager_driver(host, run):
    from kernel.errors import UsageError
    from kernel.options import WorkerOptions
    from plugins.workers.processes import ProcessDriver

    if run.clock.mode == "simulated":
        raise UsageError("plugins.workers=processes needs rill.clock=realtime: TaskExecutor processes run on the "
                         "wall clock (a simulated run has one thread; use plugins.workers=embedded)")
    return ProcessDriver(host, run.config.section(WorkerOptions), run.python_environment.executable)
