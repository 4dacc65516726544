"""Why a Spark job or task failed, in one line: the Python exception a task raised (Spark's
message carries its traceback after a generic sentence), else Spark's own first sentence."""

from __future__ import annotations

import re

_QUALIFIED = re.compile(r"^(?:[\w$]+\.)+[\w$]+: ")
_TRACEBACK = "Traceback (most recent call last):"
_MODULE = re.compile(r"^(?:\w+\.)+(?=\w+: )")  # an exception class's module


def python_exception(text: str) -> str:
    """The last exception line of the (last) Python traceback in ``text``: its class and
    message's first line; empty when there is none."""
    index = text.rfind(_TRACEBACK)
    if index < 0:
        return ""
    for line in text[index + len(_TRACEBACK):].splitlines():
        if line and line[0] not in " \t":  # not a frame, its code, Spark's SQLSTATE or the JVM's stack
            return _MODULE.sub("", line.strip())
    return ""


def first_sentence(text: str) -> str:
    """Spark's message in one sentence, without the exception's class."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = next((line[2:] for line in lines if line.startswith(": ")), lines[0] if lines else "")  # py4j's layout
    return _QUALIFIED.sub("", line).split(". ", 1)[0]


def spark_failure(text: str) -> str:
    return python_exception(text) or first_sentence(text)
