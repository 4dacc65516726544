"""The ``spark`` execution backend: bounded jobs on Spark through PySpark, in Flink's BATCH
semantics; and Spark SQL over exported event logs."""
