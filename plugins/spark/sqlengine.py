"""Plugin ``sqlengine.spark``: ``rill sql --engine spark``, the views in Spark SQL over Parquet."""

from kernel import hookimpl


class _LazyEngine:
    """Imports the engine (and PySpark) only when a query runs."""

    def query(self, request):
        from plugins.spark.sql import SparkSqlEngine

        return SparkSqlEngine().query(request)


@hookimpl
def register_config(register):
    from plugins.spark.options import SparkOptions

    register(SparkOptions)


@hookimpl
def register_sql_engines(register):
    register("spark", _LazyEngine())
