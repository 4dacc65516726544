"""Plugin ``heartbeats.default``: Flink's heartbeat managers with a fixed timeout."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.heartbeats.options import HeartbeatOptions

    register(HeartbeatOptions)


@hookimpl
def create_heartbeat_manager(owner, listener, role, run):
    from plugins.heartbeats.manager import create_manager

    return create_manager(owner, listener, role, run)
