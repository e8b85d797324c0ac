"""Frozen dataclasses to plain JSON values and back, strictly (the session file's records).

``to_plain`` turns a dataclass into a dict of JSON values (tuples become lists; floats stay
floats, which JSON round-trips exactly through ``repr``; a field whose class is no dataclass
but has ``to_plain()`` and a classmethod ``from_plain(value, what)`` writes and reads itself).
``from_plain`` rebuilds it from the field type hints and raises ``PlainError`` naming the
field when a key is missing (a field with a default may be: files written before it was added
still load), unknown or of the wrong type."""

from __future__ import annotations

import dataclasses
import types
import typing


class PlainError(ValueError):
    """A value does not fit the dataclass field it is read into."""


def to_plain(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "to_plain"):           # a value class with its own form (its from_plain reads it)
        return obj.to_plain()
    if isinstance(obj, (tuple, list)):
        return [to_plain(x) for x in obj]
    return obj


def from_plain(cls, data: dict, what: str = ""):
    """An instance of dataclass ``cls`` from ``data`` (every field without a default present,
    no unknown key)."""
    if not isinstance(data, dict):
        raise PlainError(f"{what or cls.__name__} is not a JSON object")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise PlainError(f"{what or cls.__name__} has an unknown field {unknown[0]!r}")
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue        # a field added since the file was written: its default
            raise PlainError(f"{what or cls.__name__} lacks the field {f.name!r}")
        kw[f.name] = _value(hints[f.name], data[f.name], f"{what}.{f.name}" if what else f.name)
    return cls(**kw)


def _value(tp, v, what: str):
    if dataclasses.is_dataclass(tp):
        return from_plain(tp, v, what)
    if isinstance(tp, type) and hasattr(tp, "from_plain"):
        return tp.from_plain(v, what)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for a in args:
            try:
                return _value(a, v, what)
            except PlainError:
                pass
        raise PlainError(f"{what} has the wrong type ({type(v).__name__})")
    if origin is tuple:
        if not isinstance(v, list):
            raise PlainError(f"{what} is not a list")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], x, what) for x in v)
        if len(v) != len(args):
            raise PlainError(f"{what} has {len(v)} items, not {len(args)}")
        return tuple(_value(a, x, what) for a, x in zip(args, v))
    if tp is type(None):
        if v is None:
            return None
    elif tp is float:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    elif tp is int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    elif tp in (str, bool):
        if isinstance(v, tp):
            return v
    elif tp is object:
        return v
    else:
        raise PlainError(f"{what}: cannot read a value of type {tp}")
    raise PlainError(f"{what} has the wrong type ({type(v).__name__}, expected {getattr(tp, '__name__', tp)})")
