"""PyFlink's ``pyflink.datastream.formats``: rill has none of its formats (see ``kernel.unsupported_names``)."""
