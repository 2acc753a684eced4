"""TOML for scenes: reading through the standard library (``tomllib``, or ``tomli`` before
Python 3.11) and writing the subset scene files use: tables, arrays of tables (``[[geometry]]``),
inline tables below them, arrays, strings, numbers and booleans. numpy arrays and scalars are
written as lists and numbers."""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib as _tomllib
else:  # pragma: no cover - exercised on Python 3.9 and 3.10 only
    import tomli as _tomllib

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def loads(text: str) -> dict:
    """The TOML document ``text`` as dicts and lists; ``ValueError`` when it is not TOML."""
    try:
        return _tomllib.loads(text)
    except _tomllib.TOMLDecodeError as e:
        raise ValueError(str(e)) from e


def dumps(data: Mapping[str, Any]) -> str:
    """``data`` (a scene's tables) as TOML text: top-level values first, then each table, then
    each array of tables; anything deeper as inline tables and arrays."""
    lines: list[str] = []
    tables, arrays = [], []
    for key, value in data.items():
        value = _plain(value)
        if isinstance(value, dict):
            tables.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            arrays.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, table in tables:
        lines += ["", f"[{_key(key)}]"]
        lines += [f"{_key(k)} = {_value(_plain(v))}" for k, v in table.items()]
    for key, items in arrays:
        for item in items:
            lines += ["", f"[[{_key(key)}]]"]
            lines += [f"{_key(k)} = {_value(_plain(v))}" for k, v in item.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def _plain(value: Any) -> Any:
    """numpy arrays and scalars as lists and Python numbers; tuples as lists."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} to a scene: use numbers, strings, lists or dicts")
