"""PyFlink's ``pyflink.datastream.formats``: rill has none of its formats (see ``kernel.pyflink.unsupported_names``)."""
