"""PyFlink's ``pyflink.datastream.connectors.kinesis``: importable, not supported by rill (see ``kernel.pyflink.unsupported_names``)."""

from kernel.pyflink import unsupported

__getattr__ = unsupported.module_getattr(__name__)
