"""PyFlink's ``pyflink.datastream.async_retry_predicates``: importable, not supported by rill (see ``kernel.unsupported_names``)."""

from kernel import unsupported

__getattr__ = unsupported.module_getattr(__name__)
