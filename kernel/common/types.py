"""``Row`` and ``RowKind`` as PyFlink has them (``pyflink.common.types``)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from kernel.pyflink import unsupported

__all__ = ["Row", "RowKind"]


@unsupported.members("pyflink.common.types:RowKind")
class RowKind(Enum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return ("+I", "-U", "+U", "-D")[self.value]


def _create_row(fields: list[str] | None, values: Any, row_kind: RowKind | None = None) -> Row:
    row = Row(*values)
    if fields is not None:
        row._fields = list(fields)
    if row_kind is not None:
        row._row_kind = row_kind
    return row


class Row:
    """A row of values, optionally with field names: ``Row(1, 'a')``, ``Row(name='a', age=1)``.

    Named fields are readable as attributes (``row.name``) and by name (``row['name']``).
    ``Person = Row('name', 'age')`` makes a factory: ``Person('Alice', 11)``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Can not use both args and kwargs to create Row")
        if kwargs:
            self._fields = list(kwargs.keys())
            self._values = list(kwargs.values())
            self._from_dict = True
        else:
            self._values = list(args)
        self._row_kind = RowKind.INSERT

    # -- PyFlink API ------------------------------------------------------------------------

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        if not hasattr(self, "_fields"):
            raise TypeError("Cannot convert a Row class into dict")
        if not recursive:
            return dict(zip(self._fields, self._values))

        def convert(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [convert(o) for o in obj]
            if isinstance(obj, dict):
                return {k: convert(v) for k, v in obj.items()}
            return obj

        return dict(zip(self._fields, (convert(v) for v in self._values)))

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        self._row_kind = row_kind

    def set_field_names(self, field_names: list[str]) -> None:
        self._fields = list(field_names)

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        if not hasattr(self, "_fields") or names == self._fields:
            return self._values
        difference = list(set(names).difference(self._fields))
        if difference:
            raise Exception(f"Field names {difference} not exist in {self._fields}.")
        return [self._values[self._fields.index(name)] for name in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    # -- Python protocol --------------------------------------------------------------------

    def __call__(self, *args: Any) -> Row:
        """A factory row of names creates rows: ``Row('a', 'b')(1, 2)``."""
        if len(args) > len(self):
            raise ValueError(f"Can not create Row with fields {self}, expected {len(self)} values but got {args}")
        return _create_row(self._values, args, self._row_kind)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        try:
            index = self._fields.index(item)
        except ValueError:
            raise ValueError(item) from None
        except AttributeError:
            raise AttributeError(item) from None
        return self._values[index]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (int, slice)):
            self._values[key] = value
            return
        try:
            index = self._fields.index(key)
        except ValueError:
            raise ValueError(key) from None
        except AttributeError:
            raise AttributeError(key) from None
        self._values[index] = value

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        try:
            index = self.__dict__["_fields"].index(item)
        except (KeyError, ValueError):
            raise AttributeError(item) from None
        return self.__dict__["_values"][index]

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in ("_fields", "_from_dict", "_row_kind", "_values"):
            raise AttributeError(key)
        self.__dict__[key] = value

    def __reduce__(self):
        return _create_row, (getattr(self, "_fields", None), tuple(self._values), self._row_kind)

    def __repr__(self) -> str:
        if hasattr(self, "_fields"):
            return "Row(%s)" % ", ".join("%s=%r" % (k, v) for k, v in zip(self._fields, self._values))
        return "<Row(%s)>" % ", ".join(repr(v) for v in self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row):
            return False
        if self._row_kind != other._row_kind:
            return False
        mine, theirs = hasattr(self, "_fields"), hasattr(other, "_fields")
        if mine != theirs:
            return False
        if mine:
            if sorted(self._fields) != sorted(other._fields):
                return False
            return all(self[name] == other[name] for name in self._fields)
        return self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, item: Any) -> bool:
        if hasattr(self, "_fields"):
            return item in self._fields
        return item in self._values
