"""A job's life cycle: from the script that defines it to the outcome of its run."""
