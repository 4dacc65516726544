"""Plugin ``chaining.never``: no operator is ever chained (every operator its own task)."""

from kernel import hookimpl


@hookimpl
def allow_chaining(edge, upstream, downstream, config):
    return False
