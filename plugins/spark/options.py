"""Settings of the spark backend: Spark's own keys where Spark has them."""

from __future__ import annotations

import re
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
        if not any(form.fullmatch(self.master) for form in MASTER_URLS):
            raise ValueError(f"spark.master {self.master!r} is not a master URL Spark knows: local, local[N], local[*], "
                             "local[N,F], local-cluster[N,C,M], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://URL")
        for item in self.conf:
            if "=" not in item:
                raise ValueError(f"spark.conf: {item!r} is not a key=value setting")


#: the master URLs Spark 4 starts a SparkContext with (``SparkMasterRegex``, the cluster managers it
#: ships); ``local[0]`` and a ``spark://`` URL without a port it refuses too
MASTER_URLS = tuple(re.compile(form) for form in (
    r"local", r"local\[(\*|[1-9][0-9]*)\]", r"local\[(\*|[1-9][0-9]*)\s*,\s*[0-9]+\]",
    r"local-cluster\[\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*,\s*[1-9][0-9]*\s*\]",
    r"spark://{0}:[0-9]+(,{0}:[0-9]+)*".format(r"(\[[0-9A-Fa-f:.]+\]|[^,:/\s\[\]]+)"), r"yarn", r"k8s://\S+",
))
