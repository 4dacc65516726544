"""What ``rill sql --engine spark`` may run, decided on Spark's own plans before anything executes.

Three lines, each enough on its own for what it covers (:class:`SqlSandbox`):

1. :meth:`~SqlSandbox.parse`: Spark's parser (which runs nothing; ``spark.sql()`` would run a
   command at once) must give one query, or EXPLAIN of one, built only from query operators: no
   command, no write, no ``TRANSFORM`` script; no relation named by path (``csv.`/x```) or in
   another database, no function of the refused family by name. All this before analysis, which
   would already list directories and read files (a CSV header, Parquet footers).
2. The query runs in a session of its own (``SparkSession.newSession``: its own settings,
   temporary views and function registries) with SQL on files off and every function of the
   refused family dropped from its registries.
3. :meth:`~SqlSandbox.analyse`: the analysed plan (resolved, nothing executed) reads only the
   export's Parquet files, through query operators, with no reflection or user-defined function
   anywhere, subqueries included. That plan is the one that runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from kernel.errors import RillError, UsageError

if TYPE_CHECKING:
    from kernel.contracts.sql import ResultWriter
    from kernel.sqlbounds import QueryBounds

#: rows handed to the result writer at a time
CHUNK = 2048
#: what Spark says when the driver runs short of memory: its heap, or the results of a job over
#: ``spark.driver.maxResultSize``
OUT_OF_MEMORY = ("OutOfMemoryError", "spark.driver.maxResultSize")

#: operators of a parsed query (Spark's parser output for SELECT, set operations, VALUES, CTEs,
#: table functions, hints, windows, pivots, lateral joins, pipe syntax)
QUERY_OPERATORS = frozenset({
    "Project", "Filter", "Aggregate", "Join", "LateralJoin", "SubqueryAlias", "UnresolvedRelation",
    "UnresolvedWith", "Union", "Intersect", "Except", "Distinct", "Sort", "GlobalLimit", "LocalLimit", "Offset",
    "OneRowRelation", "LocalRelation", "UnresolvedInlineTable", "UnresolvedHaving", "UnresolvedQualify",
    "WithWindowDefinition", "Generate", "UnresolvedTableValuedFunction", "UnresolvedTVFAliases",
    "UnresolvedSubqueryColumnAliases", "Pivot", "Unpivot", "Sample", "RepartitionByExpression", "Repartition",
    "UnresolvedHint", "PipeOperator",
})

#: operators of an analysed query; the leaves among them: no input, a CTE's rows, or the export's files
PLAN_OPERATORS = frozenset({
    "Project", "Filter", "Aggregate", "Join", "LateralJoin", "SubqueryAlias", "View", "Union", "Intersect",
    "Except", "Distinct", "Deduplicate", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Window", "Expand",
    "Generate", "Sample", "RepartitionByExpression", "Repartition", "RebalancePartitions", "ResolvedHint",
    "WithCTE", "CTERelationDef", "UnionLoop", "PipeOperator",
    "OneRowRelation", "LocalRelation", "ResolvedInlineTable", "Range", "CTERelationRef", "UnionLoopRef",
    "LogicalRelation",
})

#: functions (by the class Spark's registries name for them) that run arbitrary JVM code or read
#: files: refused by name, dropped from the session's registries, refused in the analysed plan
REFUSED_FUNCTIONS = {
    "org.apache.spark.sql.catalyst.expressions.CallMethodViaReflection": "calls Java methods by reflection",
    "org.apache.spark.sql.catalyst.expressions.TryReflect": "calls Java methods by reflection",
    "org.apache.spark.sql.catalyst.expressions.FromProtobuf": "reads a descriptor file",
    "org.apache.spark.sql.catalyst.expressions.ToProtobuf": "reads a descriptor file",
    "org.apache.spark.sql.catalyst.expressions.FromAvro": "reads a schema file",
    "org.apache.spark.sql.catalyst.expressions.ToAvro": "reads a schema file",
    "org.apache.spark.sql.catalyst.expressions.SchemaOfAvro": "reads a schema file",
    "org.apache.spark.sql.catalyst.plans.logical.PythonWorkerLogs": "reads the Python workers' log files",
}

#: why an operator that is no query operator is refused inside a query
NOT_QUERY = {
    "ScriptTransformation": "TRANSFORM ... USING runs a program",
    "RelationTimeTravel": "time travel reads other versions of a table",
    "PlanWithUnresolvedIdentifier": "IDENTIFIER() with a computed name cannot be checked before it runs",
    "UnresolvedEventTimeWatermark": "WATERMARK is for streaming queries",
}

#: the database of the session catalog that holds the runs' tables (``rill.runs``, ``rill.ev_<kind>``)
DATABASE = "rill"

LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."


def _items(seq: Any) -> Iterator[Any]:
    """The elements of a Scala ``Seq``."""
    for index in range(seq.size()):
        yield seq.apply(index)


def _java_items(iterable: Any) -> Iterator[Any]:
    """The elements of a Java ``Iterable``."""
    iterator = iterable.iterator()
    while iterator.hasNext():
        yield iterator.next()


def _name(node: Any) -> str:
    return str(node.getClass().getSimpleName()).rstrip("$")  # a Scala object's class ends with $


def _identifier(parts: Any) -> str:
    return ".".join(f"`{part}`" for part in _items(parts))


#: per Spark application, (registry, identifier, why) of every function of the refused family:
#: the builtin registries do not change while it runs, and reading them is thousands of JVM calls
_FAMILIES: dict[str, list[tuple[str, Any, str]]] = {}
REGISTRIES = ("functionRegistry", "tableFunctionRegistry")


def _family(session: Any) -> list[tuple[str, Any, str]]:
    application = session.sparkContext.applicationId
    if application not in _FAMILIES:
        state = session._jsparkSession.sessionState()
        family = []
        for registry in REGISTRIES:
            functions = getattr(state, registry)()
            for identifier in _java_items(functions.listFunction()):
                info = functions.lookupFunction(identifier)
                if info.isDefined() and info.get().getClassName() in REFUSED_FUNCTIONS:
                    family.append((registry, identifier, REFUSED_FUNCTIONS[info.get().getClassName()]))
        _FAMILIES[application] = family
    return _FAMILIES[application]


class SqlSandbox:
    """One query's sandbox over ``spark``'s context: a session of its own, its checks, its run."""

    def __init__(self, spark: Any) -> None:
        self.session = spark.newSession()
        self._jvm = spark._jvm
        load = self._jvm.java.lang.Class.forName
        self._logical_plan = load(LOGICAL + "LogicalPlan")
        self._plan_expression = load(EXPRESSIONS + "PlanExpression")
        self._user_defined = load(EXPRESSIONS + "UserDefinedExpression")
        self._statements = (load(LOGICAL + "Command"), load(LOGICAL + "ParsedStatement"))
        self._state = self.session._jsparkSession.sessionState()
        self.refused: dict[str, str] = {}  # function name -> why
        for registry, identifier, reason in _family(self.session):
            self.refused[str(identifier.funcName()).lower()] = reason
            getattr(self._state, registry)().dropFunction(identifier)
        self.session.conf.set("spark.sql.runSQLOnFiles", "false")

    # -- line 1: the parsed statement -----------------------------------------------------------------

    def parse(self, query: str) -> Any:
        """The parsed statement: one query, or EXPLAIN of one, that names only what it may read."""
        parser = self._state.sqlParser()
        try:
            statement = parser.parsePlan(query)
        except Exception as exc:
            if _several_statements(parser, query):
                raise UsageError("rill sql runs one statement: give one SQL statement at a time") from None
            raise UsageError(f"SQL error: {error_line(exc)}") from None
        explain = _name(statement) == "ExplainCommand"
        query_plan = statement.logicalPlan() if explain else statement
        top = query_plan
        while _name(top) == "UnresolvedWith":  # WITH ... INSERT: the statement under the CTEs
            top = top.child()
        if _name(top) not in QUERY_OPERATORS and _name(top) not in NOT_QUERY:
            if explain:
                raise UsageError(f"rill sql is read-only: EXPLAIN of {_name(top)} is refused (EXPLAIN a query)")
            raise UsageError(f"rill sql is read-only: {_name(top)} statements are refused (use SELECT)")
        self._check_parsed(query_plan)
        return statement

    def _check_parsed(self, plan: Any) -> None:
        name = _name(plan)
        if name not in QUERY_OPERATORS:
            if any(kind.isInstance(plan) for kind in self._statements):
                raise UsageError(f"rill sql is read-only: {name} statements are refused (use SELECT)")
            raise UsageError(f"rill sql runs plain queries: {name} is refused"
                             + (f" ({NOT_QUERY[name]})" if name in NOT_QUERY else ""))
        if name == "UnresolvedRelation":
            self._check_relation_name(plan.multipartIdentifier())
            if not plan.options().isEmpty():  # WITH ('path' = ...): a table is read as registered
                raise UsageError(f"rill sql reads rill's tables as they are: options on "
                                 f"{_identifier(plan.multipartIdentifier())} are refused")
        elif name == "UnresolvedTableValuedFunction":
            self._check_function_name(plan.name())
        expressions = list(_items(plan.expressions()))
        if name == "WithWindowDefinition":  # named windows are held in a map, not among the expressions
            expressions += list(_java_items(self._jvm.scala.jdk.javaapi.CollectionConverters.asJava(
                plan.windowDefinitions().values())))
        for expression in expressions:
            self._check_parsed_expression(expression)
        for child in [*_items(plan.children()), *_items(plan.innerChildren())]:
            if self._logical_plan.isInstance(child):
                self._check_parsed(child)

    def _check_parsed_expression(self, expression: Any) -> None:
        name = _name(expression)
        if name == "UnresolvedFunction":
            self._check_function_name(expression.nameParts())
        elif name == "ExpressionWithUnresolvedIdentifier":
            why = NOT_QUERY["PlanWithUnresolvedIdentifier"]
            raise UsageError(f"rill sql runs plain queries: {name} is refused ({why})")
        if self._plan_expression.isInstance(expression):
            self._check_parsed(expression.plan())
        for child in _items(expression.children()):
            self._check_parsed_expression(child)

    def _check_relation_name(self, parts: Any) -> None:
        names = [str(part).lower() for part in _items(parts)]
        if len(names) == 1 or names[:-1] in ([DATABASE], ["spark_catalog", DATABASE]):
            return
        raise UsageError(f"rill sql reads only rill's tables and views: {_identifier(parts)} is refused "
                         "(no path-based relations, no other databases)")

    def _check_function_name(self, parts: Any) -> None:
        name = str(parts.last()).lower()
        if name in self.refused:
            raise UsageError(f"rill sql refuses {name}(): it {self.refused[name]}")

    # -- line 3: the analysed plan --------------------------------------------------------------------

    def analyse(self, statement: Any, root: str) -> Any:
        """The plan to run: ``statement``'s query analysed (nothing executed), checked to read
        only Parquet files under ``root`` (a fully qualified directory: ``file:/dir``)."""
        explain = _name(statement) == "ExplainCommand"
        skip = self._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
        try:
            plan = self._state.executePlan(statement.logicalPlan() if explain else statement, skip).analyzed()
        except Exception as exc:
            raise UsageError(f"SQL error: {error_line(exc)}") from None
        self.check(plan, root)
        if explain:
            return self._jvm.org.apache.spark.sql.execution.command.ExplainCommand(plan, statement.mode())
        return plan

    def check(self, plan: Any, root: str) -> None:
        """Refuse an analysed plan that reads anything but Parquet files under ``root``, through
        anything but query operators, or calls a refused or user-defined function."""
        self._check_analysed(plan, root.rstrip("/") + "/")

    def _check_analysed(self, plan: Any, root: str) -> None:
        name = _name(plan)
        if name not in PLAN_OPERATORS:
            raise UsageError(f"rill sql reads only rill's tables and views: {name} is refused")
        if name == "LogicalRelation":
            self._check_relation(plan.relation(), root)
        for expression in _items(plan.expressions()):
            self._check_expression(expression, root)
        for child in [*_items(plan.children()), *_items(plan.innerChildren())]:
            if self._logical_plan.isInstance(child):
                self._check_analysed(child, root)

    def _check_relation(self, relation: Any, root: str) -> None:
        """A file relation over Parquet files under ``root``, nothing else."""
        files = [str(path.toString()) for path in _items(relation.location().rootPaths())] if (
            _name(relation) == "HadoopFsRelation") else []
        outside = [path for path in files if not path.startswith(root)]
        if outside or not files or _name(relation.fileFormat()) != "ParquetFileFormat":
            what = (outside or files or [_name(relation)])[0]
            raise UsageError(f"rill sql reads only rill's tables and views: {what} is refused (not the runs' files)")

    def _check_expression(self, expression: Any, root: str) -> None:
        reason = REFUSED_FUNCTIONS.get(expression.getClass().getName())
        if reason:
            raise UsageError(f"rill sql refuses {expression.prettyName()}(): it {reason}")
        if self._user_defined.isInstance(expression):
            raise UsageError(f"rill sql refuses user-defined functions: {expression.name()}() is one")
        if self._plan_expression.isInstance(expression):
            self._check_analysed(expression.plan(), root)
        for child in _items(expression.children()):
            self._check_expression(child, root)

    # -- running it -----------------------------------------------------------------------------------

    def run(self, plan: Any, result: ResultWriter, bounds: QueryBounds) -> None:
        """Hand the columns and rows of a plan :meth:`analyse` returned to ``result``: as many as
        it wants (and one more, to tell there are more) in one job, or every row, a partition at
        a time; the Spark driver running short of memory is the memory bound."""
        from pyspark.sql import DataFrame

        try:
            frame = DataFrame(self._jvm.org.apache.spark.sql.classic.Dataset.ofRows(self.session._jsparkSession, plan),
                              self.session)
            result.columns(list(frame.columns))
            if result.wanted is not None:
                result.rows([tuple(row) for row in frame.limit(result.wanted + 1).collect()])
                return
            chunk: list[tuple] = []
            for row in frame.toLocalIterator():
                chunk.append(tuple(row))
                if len(chunk) == CHUNK:
                    if not result.rows(chunk):
                        return
                    chunk = []
            if chunk:
                result.rows(chunk)
        except RillError:
            raise
        except Exception as exc:
            line = error_line(exc)
            if any(sign in line for sign in OUT_OF_MEMORY):
                raise bounds.out_of_memory() from None
            raise UsageError(f"SQL error: {line}") from None


def _several_statements(parser: Any, query: str) -> bool:
    """Whether ``query`` starts with a whole statement ended by ``;`` (Spark's parser decides)."""
    start = query.find(";")
    while start >= 0:
        try:
            parser.parsePlan(query[:start])
            return True
        except Exception:
            start = query.find(";", start + 1)
    return False


def error_line(exc: BaseException) -> str:
    """The first line of what Spark says (a Java exception's class and message, never its trace)."""
    from py4j.protocol import Py4JJavaError

    text = str(exc.java_exception.toString()) if isinstance(exc, Py4JJavaError) else str(exc)
    return next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
