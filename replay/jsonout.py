"""JSON as ``--format json`` and ``--json`` print it: always valid JSON. A float that is not
finite (NaN for a figure never measured, ±Infinity) is ``null``; a value JSON has no type for
(a timestamp, a decimal, an interval) is its text."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float inside it replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value: Any) -> str:
    return json.dumps(finite(value), indent=2, default=str, allow_nan=False)
