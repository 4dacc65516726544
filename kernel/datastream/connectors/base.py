"""PyFlink's ``pyflink.datastream.connectors.base``: delivery guarantees (the Java source and sink
wrappers are not supported by rill, see ``kernel.pyflink.unsupported_names``)."""

from enum import Enum

from kernel.pyflink import unsupported

__all__ = ["DeliveryGuarantee"]


class DeliveryGuarantee(Enum):
    """The delivery guarantee asked of a source or sink (PyFlink's values, tuples included)."""

    EXACTLY_ONCE = (0,)
    AT_LEAST_ONCE = (1,)
    NONE = 2


__getattr__ = unsupported.module_getattr(__name__)
