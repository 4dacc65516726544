"""PyFlink's ``pyflink.datastream.checkpoint_config``: importable, not supported by rill (see ``kernel.unsupported_names``)."""

from kernel import unsupported

__getattr__ = unsupported.module_getattr(__name__)
