"""PyFlink's ``pyflink.datastream.async_retry_predicates``: ready-made retry predicates."""

from __future__ import annotations

from typing import Any


def empty_result_predicate(result: list | None) -> bool:
    """Retry an empty (or None) result."""
    return result is None or len(result) == 0


def has_exception_predicate(error: BaseException | None) -> bool:
    """Retry on any exception."""
    return error is not None


def exception_type_predicate(error: BaseException | None, expected_error_type: Any) -> bool:
    """Retry on an exception of ``expected_error_type`` (use it in a lambda:
    ``lambda e: exception_type_predicate(e, IOError)``)."""
    return isinstance(error, expected_error_type)
