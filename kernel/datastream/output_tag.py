"""``OutputTag``: names a side output."""

from __future__ import annotations

from typing import Any

from kernel.pyflink import unsupported
from kernel.common.typeinfo import TypeInformation, resolve_type


@unsupported.members("pyflink.datastream.output_tag:OutputTag")
class OutputTag:
    def __init__(self, tag_id: str, type_info: TypeInformation | list | None = None) -> None:
        if not tag_id:
            raise ValueError("OutputTag tag_id cannot be None or empty string")
        if type_info is not None and not isinstance(type_info, (TypeInformation, list)):
            raise TypeError("OutputTag type_info must be None, a TypeInformation or a list of them")
        self.tag_id = tag_id
        self.type_info = resolve_type(type_info)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r}, {self.type_info!r})"
