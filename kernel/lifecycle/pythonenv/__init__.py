"""The job's Python dependencies (PyFlink's ``python.files``, ``python.archives``,
``python.requirements``, ``python.executable``): what they are, how the client prepares them
and how a worker takes them up."""
