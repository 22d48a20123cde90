"""Field checks shared by every class of the plan model.

A plan file may come from anywhere and drives writes to production clusters, so every model class checks its
own fields on construction and raises ``PlanError`` with the field's name; ``plans.serialize`` prefixes the
file and the field path. Sharing one set of checks keeps the messages identical across classes (a reader
learns them once) and keeps the model's frozen dataclasses free of validation boilerplate.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

from mm2ctl.core.errors import PlanError


def check_str(value: object, name: str, *, empty_ok: bool = False) -> None:
    """``value`` is a string (and not empty unless ``empty_ok``)."""
    if not isinstance(value, str):
        raise PlanError(f"{name}: expected a string, got {type(value).__name__}")
    if not empty_ok and not value:
        raise PlanError(f"{name}: must not be empty")


def check_int(value: object, name: str, *, minimum: int | None = 0) -> None:
    """``value`` is an integer (a bool is not) of at least ``minimum``, when given."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanError(f"{name}: expected an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise PlanError(f"{name}: must be >= {minimum}, got {value}")


def check_bool(value: object, name: str) -> None:
    """``value`` is true or false."""
    if not isinstance(value, bool):
        raise PlanError(f"{name}: expected true/false, got {type(value).__name__}")


def check_b64(value: object, name: str) -> bytes:
    """``value`` is strict base64 text; returns the bytes it encodes."""
    check_str(value, name, empty_ok=True)
    assert isinstance(value, str)
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise PlanError(f"{name}: not valid base64") from exc


def check_file_name(value: object, name: str) -> None:
    """``value`` is a bare file name: it cannot point outside the directory it is resolved in."""
    check_str(value, name)
    assert isinstance(value, str)
    if "/" in value or "\\" in value or value in (".", "..") or "\0" in value:
        raise PlanError(f"{name}: must be a bare file name, got {value!r}")


def check_unique(keys: Iterable[object], name: str) -> None:
    """No key repeats (two rows for one partition would make a step ambiguous)."""
    seen: set[object] = set()
    for k in keys:
        if k in seen:
            raise PlanError(f"{name}: duplicate entry {k!r}")
        seen.add(k)


def set_field(obj: object, name: str, value: object) -> None:
    """Set a field of a frozen dataclass from its ``__post_init__`` (to store a normalised value)."""
    object.__setattr__(obj, name, value)


def freeze_tuple(obj: object, name: str) -> None:
    """Store field ``name`` of ``obj`` as a tuple: any iterable but a string is accepted, then frozen."""
    value = getattr(obj, name)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise PlanError(f"{name}: expected a list, got {type(value).__name__}")
    set_field(obj, name, tuple(value))
