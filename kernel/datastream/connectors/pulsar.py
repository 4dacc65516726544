"""PyFlink's ``pyflink.datastream.connectors.pulsar``: importable, not supported by rill (see
``kernel.pyflink.unsupported_names``), but for ``DeliveryGuarantee``, which jobs import from here as PyFlink's
module imports it too."""

from kernel.pyflink import unsupported
from kernel.datastream.connectors.base import DeliveryGuarantee  # noqa: F401 - importable from here

__getattr__ = unsupported.module_getattr(__name__)
