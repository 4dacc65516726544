"""Connectors: files, number sequences and a seeded data generator (PyFlink's
``pyflink.datastream.connectors``)."""

from kernel.datastream.connectors.base import DeliveryGuarantee, Sink, Source

__all__ = ["DeliveryGuarantee", "Sink", "Source"]
