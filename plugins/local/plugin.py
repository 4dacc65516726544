"""Plugin ``backend.local``: the embedded in-process cluster."""

from kernel import hookimpl


@hookimpl
def create_execution_backend(config):
    from plugins.local.backend import LocalBackend

    return LocalBackend()
