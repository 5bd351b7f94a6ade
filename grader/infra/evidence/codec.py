"""Dataclasses to JSON objects and back, by their type hints.

A record gains a field by declaring it: writing walks the dataclass (leaving
out an optional field at its default, and naming a field by its JSON key);
reading checks the JSON against a voluptuous schema made from the same type
hints (vendored: the grading machine installs nothing) and builds the record.
Reading is strict (an unknown key, a missing one or a wrong type is an
EvidenceError naming where), because a key the reader skips is a figure the
decks silently lose; every such problem of a file is named at once.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any

from ...results import LabResult
from ...third_party.voluptuous import (
    All,
    Coerce,
    Invalid,
    MultipleInvalid,
    Optional,
    Required,
    Schema,
)
from ...third_party.voluptuous.error import RequiredFieldInvalid

Validator = typing.Callable[[Any], Any]


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
    try:
        return _validator(tp)(data)
    except MultipleInvalid as e:
        raise EvidenceError("; ".join(_say(where, x) for x in e.errors)) from None
    except Invalid as e:
        raise EvidenceError(_say(where, e)) from None


class _UnknownKey(Invalid):
    """A key no field of the record names (its path ends in the key)."""


def _say(where: str, e: Invalid) -> str:
    """One problem as `where.key[index]...: what is wrong`."""
    path = [f"[{k}]" if isinstance(k, int) else f".{k}" for k in e.path]
    if isinstance(e, _UnknownKey):  # named in the record that holds it
        return f"{where}{''.join(path[:-1])}: unknown key {e.path[-1]} {e.msg}"
    if isinstance(e, RequiredFieldInvalid):  # the path ends in the key's marker
        return f"{where}{''.join(path[:-1])}: {e.msg}"
    return f"{where}{''.join(path)}: {e.msg}"


def _validator(tp: Any) -> Validator:
    """The check-and-build function for a type hint; records are built lazily, so
    that a record may hold itself (a profile run's runs)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return lambda v: v
    if tp in (dict, list):  # a bare container in a foreign record: kept verbatim
        return _of_type(tp, f"a {tp.__name__}")
    if origin in (typing.Union, types.UnionType):
        return _optional(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return Schema(All(_of_type(list, "a list"), [_validator(item)]))
    if origin is dict:
        kt, vt = typing.get_args(tp)
        key = Coerce(int, msg="the key must be a whole number") if kt is int else str
        return Schema(All(_of_type(dict, "an object"), {key: _validator(vt)}))
    if tp is LabResult:
        return _lab_result
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return lambda v: _record(tp)(v)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):  # statuses as StrEnum, say
        return _enum(tp)
    if tp is float:
        return _of_type((int, float), "a number", bool)
    if tp in (int, str):
        return _of_type(tp, f"a {tp.__name__}", bool)
    if tp is bool:
        return _of_type(bool, "a bool")
    raise EvidenceError(f"the schema has a type the reader cannot read: {tp}")


@functools.cache
def _record(cls: type) -> Validator:
    hints = typing.get_type_hints(cls)
    fields = {_key(f): f for f in dataclasses.fields(cls) if f.init}
    known = ", ".join(fields)
    shape: dict[Any, Any] = {}
    for k, f in fields.items():
        if _default(f) is dataclasses.MISSING:
            shape[Required(k, msg=f"missing key {k} ({cls.__name__})")] = _validator(hints[f.name])
        else:
            shape[Optional(k)] = _validator(hints[f.name])

    def unknown(v: Any) -> Any:
        raise _UnknownKey(f"in {cls.__name__} (known: {known})")

    shape[str] = unknown  # tried only for a key no field names
    check = Schema(All(_of_type(dict, f"an object ({cls.__name__})"), shape))
    return lambda v: cls(**{fields[k].name: x for k, x in check(v).items()})


def _optional(tp: Any) -> Validator:
    """X | None, the one union a record uses: None as None, anything else as X."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if len(args) != 1 or len(typing.get_args(tp)) != 2:
        raise EvidenceError(f"the schema has a union the reader cannot read: {tp}")
    inner = Schema(_validator(args[0]))
    return lambda v: None if v is None else inner(v)


def _of_type(tp: Any, what: str, but: type | None = None) -> Validator:
    """Data of a JSON type, as it is (`but`: bool, which Python counts as a number)."""

    def check(v: Any) -> Any:
        if not isinstance(v, tp) or (but is not None and isinstance(v, but)):
            raise Invalid(f"must be {what}, not {_show(v)}")
        return v

    return check


def _lab_result(v: Any) -> LabResult:
    """Scoring's own serialised form (points included), read by scoring."""
    _of_type(dict, "an object")(v)
    try:
        return LabResult.from_dict(v)
    except TypeError as e:
        raise Invalid(f"not a lab result ({e})") from None


def _enum(tp: type[enum.Enum]) -> Validator:
    def read(v: Any) -> Any:
        try:
            return tp(v)
        except ValueError:
            raise Invalid(f"{v!r} is not one of {', '.join(repr(m.value) for m in tp)}") from None

    return read


def _show(data: Any) -> str:
    text = repr(data)
    return f"{type(data).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
