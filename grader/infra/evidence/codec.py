"""Dataclasses to JSON objects and back, by their type hints.

One small walker instead of a to_dict/from_dict pair per record: a record
gains a field by declaring it. Reading is strict (an unknown key, a missing
one or a wrong type is an EvidenceError naming where), because a key the
reader skips is a figure the decks silently lose.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any

from ...results import LabResult


class EvidenceError(ValueError):
    """An evidence file this grader cannot read: where, and what is wrong."""


def _key(f: dataclasses.Field) -> str:
    return f.metadata.get("key", f.name)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def encode(value: Any) -> Any:
    """A record (or list, dict, plain value) as JSON data; int dict keys become strings."""
    if isinstance(value, LabResult):  # scoring's own serialised form (points included)
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.metadata.get("omit") and v == _default(f):
                continue
            out[_key(f)] = encode(v)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def decode(tp: Any, data: Any, where: str) -> Any:
    """JSON data as type `tp` (a record, list[...], dict[...], X | None, a plain type)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if tp in (dict, list):  # a bare container in a foreign record: kept verbatim
        _need(isinstance(data, tp), where, f"a {tp.__name__}", data)
        return data
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        errors = []
        for a in rest:
            try:
                return decode(a, data, where)
            except EvidenceError as e:
                errors.append(str(e))
        raise EvidenceError(
            errors[0] if len(errors) == 1 else f"{where}: none of {tp} fits {_show(data)}"
        )
    if origin is list:
        (item,) = typing.get_args(tp)
        _need(isinstance(data, list), where, "a list", data)
        return [decode(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        kt, vt = typing.get_args(tp)
        _need(isinstance(data, dict), where, "an object", data)
        return {_dict_key(kt, k, where): decode(vt, v, f"{where}.{k}") for k, v in data.items()}
    if tp is LabResult:
        _need(isinstance(data, dict), where, "an object", data)
        try:
            return LabResult.from_dict(data)
        except TypeError as e:
            raise EvidenceError(f"{where}: not a lab result ({e})") from None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _record(tp, data, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):  # statuses as StrEnum, say
        try:
            return tp(data)
        except ValueError:
            raise EvidenceError(
                f"{where}: {data!r} is not one of {', '.join(repr(m.value) for m in tp)}"
            ) from None
    if tp is float:
        _need(
            isinstance(data, (int, float)) and not isinstance(data, bool), where, "a number", data
        )
        return data
    if tp in (int, str, bool):
        _need(
            isinstance(data, tp) and (tp is bool or not isinstance(data, bool)),
            where,
            f"a {tp.__name__}",
            data,
        )
        return data
    raise EvidenceError(f"{where}: the schema has a type the reader cannot read: {tp}")


def _record(cls: type, data: Any, where: str) -> Any:
    _need(isinstance(data, dict), where, f"an object ({cls.__name__})", data)
    hints = typing.get_type_hints(cls)
    fields = {_key(f): f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise EvidenceError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} in {cls.__name__} (known: "
            f"{', '.join(fields)})"
        )
    kwargs = {}
    for k, f in fields.items():
        if k in data:
            kwargs[f.name] = decode(hints[f.name], data[k], f"{where}.{k}")
        elif _default(f) is dataclasses.MISSING:
            raise EvidenceError(f"{where}: missing key {k} ({cls.__name__})")
    return cls(**kwargs)


def _dict_key(kt: Any, k: str, where: str) -> Any:
    if kt is int:
        try:
            return int(k)
        except ValueError:
            raise EvidenceError(f"{where}: key {k!r} must be a whole number") from None
    return k


def _need(ok: bool, where: str, what: str, data: Any) -> None:
    if not ok:
        raise EvidenceError(f"{where}: must be {what}, not {_show(data)}")


def _show(data: Any) -> str:
    text = repr(data)
    return f"{type(data).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
