"""Settings of the spark backend: Spark's own keys where Spark has them."""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel.config import Section


class SparkOptions(Section):
    master: Annotated[str, msgspec.Meta(description="Spark master URL")] = msgspec.field(
        name="spark.master", default="local[2]")
    app_name: Annotated[str, msgspec.Meta(description="Spark application name")] = msgspec.field(
        name="spark.app.name", default="rill")
    ui: Annotated[bool, msgspec.Meta(description="start Spark's web UI")] = msgspec.field(
        name="spark.ui.enabled", default=False)
    log_level: Annotated[str, msgspec.Meta(description="level of Spark's own logging (WARN, ERROR, INFO, ...)")] = (
        msgspec.field(name="spark.log-level", default="WARN"))
    conf: Annotated[list[str], msgspec.Meta(description="more Spark settings, as 'key=value' strings")] = (
        msgspec.field(name="spark.conf", default_factory=list))

    def check(self) -> None:
        for item in self.conf:
            if "=" not in item:
                raise ValueError(f"spark.conf: {item!r} is not a key=value setting")
