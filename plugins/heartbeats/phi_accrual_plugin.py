"""Plugin ``heartbeats.phi-accrual``: the heartbeat managers with a phi-accrual failure detector
instead of a fixed timeout (:mod:`.phi_accrual`)."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.heartbeats.options import HeartbeatOptions, PhiAccrualOptions

    register(HeartbeatOptions)
    register(PhiAccrualOptions)


@hookimpl
def create_heartbeat_manager(owner, listener, role, run):
    from plugins.heartbeats.manager import create_manager
    from plugins.heartbeats.options import HeartbeatOptions, PhiAccrualOptions
    from plugins.heartbeats.phi_accrual import PhiAccrualHeartbeatMonitor

    options = run.config.section(PhiAccrualOptions)
    interval = run.config.section(HeartbeatOptions).interval

    def monitor(manager, resource_id, target):
        return PhiAccrualHeartbeatMonitor(manager, resource_id, target, options, interval)

    return create_manager(owner, listener, role, run, monitor)
