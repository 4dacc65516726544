"""The sandbox a user's SQL runs in (``rill sql``): DuckDB's own guards, then a statement check.

A connection is set up with rill's own SQL first (the event log attached read-only, or the
Parquet files of an export registered as Arrow datasets, and the views), then sealed: local
files become unreachable (``disabled_filesystems = 'LocalFileSystem'`` — the attached log is
read through the handle it was opened with, an export by Arrow through the datasets built
before), external access, extension installing and loading, persistent secrets and Python
replacement scans are off, and the configuration is locked, so no statement can change any of
this back. DuckDB's ``allowed_paths`` is no guard here: it lets COPY write the files it allows,
and turning external access off adds every attached database's file (and its WAL) to it.

The statement check is a second line: one query (SELECT, FROM-first, WITH, VALUES, DESCRIBE,
SHOW, SUMMARIZE), or EXPLAIN of one; DuckDB's EXPLAIN ANALYZE executes the statement it
explains, so EXPLAIN of anything else is refused too.
"""

from __future__ import annotations

from typing import Any

from kernel.errors import UsageError

#: set in this order; enable_external_access must be off before LocalFileSystem is disabled
SEAL = (
    ("autoinstall_known_extensions", False),
    ("autoload_known_extensions", False),
    ("allow_community_extensions", False),
    ("allow_unsigned_extensions", False),
    ("allow_extension_repositories", "forbidden"),
    ("allow_persistent_secrets", False),
    ("python_enable_replacements", False),
    ("temp_directory", ""),
    ("enable_external_access", False),
    ("disabled_filesystems", "LocalFileSystem"),
    ("lock_configuration", True),
)

READ_ONLY = "rill sql is read-only"


def seal(con: Any) -> None:
    """Make ``con`` read only what it has been given, for good."""
    for name, value in SEAL:
        con.execute(f"SET {name} = {value!r}" if isinstance(value, str) else f"SET {name} = {str(value).lower()}")


def check_statement(con: Any, query: str) -> None:
    """Refuse anything but one query, or EXPLAIN of one, before it runs."""
    statements = _statements(con, query)
    if not statements:
        raise UsageError("no SQL statement given")
    if len(statements) > 1:
        raise UsageError("give one SQL statement at a time")
    (statement,) = statements
    kind = _kind(statement)
    if kind == "EXPLAIN":
        explained = _explained(con, statement.query)
        if explained != "SELECT":
            raise UsageError(f"{READ_ONLY}: EXPLAIN of {explained} is refused (EXPLAIN a SELECT)")
    elif kind != "SELECT":
        raise UsageError(f"{READ_ONLY}: {kind} statements are refused (use SELECT)")


def _statements(con: Any, text: str) -> list[Any]:
    import duckdb

    try:
        return con.extract_statements(text)
    except duckdb.Error as exc:
        raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None


def _kind(statement: Any) -> str:
    """The statement's type; one the Python client has no name for (e.g. UPDATE EXTENSIONS)
    is "unrecognised"."""
    try:
        return statement.type.name
    except ValueError:
        return "unrecognised"


def _explained(con: Any, text: str) -> str:
    """The type of the statement an EXPLAIN explains: what follows ``EXPLAIN [ANALYZE]``, or
    what follows its parenthesised options (``EXPLAIN (ANALYZE, FORMAT json) ...``)."""
    import duckdb

    tokens = duckdb.tokenize(text)
    ends = [offset for offset, _ in tokens[1:]] + [len(text)]
    words = [(offset, kind, text[offset:end].strip().upper())
             for (offset, kind), end in zip(tokens, ends) if kind != duckdb.token_type.comment]
    position = 2 if len(words) > 1 and words[1][2] in ("ANALYZE", "ANALYSE") else 1
    candidates = [position]
    depth = 0
    for index in range(position, len(words)):
        _, kind, word = words[index]
        if kind != duckdb.token_type.operator:
            if depth == 0:
                break
            continue
        depth += word.count("(") - word.count(")")
        if depth <= 0:
            candidates.append(index + 1)
            break
    for start in candidates:
        if start >= len(words):
            continue
        try:
            inner = con.extract_statements(text[words[start][0]:])
        except (duckdb.Error, ValueError):
            continue
        if len(inner) == 1:
            return _kind(inner[0])
    return "a statement rill cannot read"
