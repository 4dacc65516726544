"""Plugin ``failover.flink``: Flink's restart back-off strategies (``restart-strategy.type``)
and failover strategies (``jobmanager.execution.failover-strategy``)."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.failover.options import RestartOptions

    register(RestartOptions)


@hookimpl
def create_restart_strategy(run, checkpointing):
    from plugins.failover.options import RestartOptions
    from plugins.failover.restart import create_restart_strategy as create

    return create(run.config.section(RestartOptions), run.rng.stream("restart-strategy"), checkpointing)


@hookimpl
def create_failover_strategy(execution_graph, config):
    from plugins.failover.options import RestartOptions
    from plugins.failover.strategies import RestartAllFailoverStrategy, RestartPipelinedRegionFailoverStrategy

    if config.section(RestartOptions).failover_strategy == "full":
        return RestartAllFailoverStrategy(execution_graph)
    return RestartPipelinedRegionFailoverStrategy(execution_graph)
