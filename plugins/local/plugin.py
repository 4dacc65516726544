"""Plugin ``backend.local``: the embedded in-process cluster."""

from kernel import hookimpl


@hookimpl
def register_config(register):
    from plugins.local.options import ClusterOptions

    register(ClusterOptions)


@hookimpl
def register_event_types(register):
    from plugins.local.events import LOCAL_EVENT_TYPES

    for event_type in LOCAL_EVENT_TYPES:
        register(event_type)


@hookimpl
def create_execution_backend(config):
    from plugins.local.backend import LocalBackend

    return LocalBackend()
