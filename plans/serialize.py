"""Plan files: YAML for people to review, a JSON view for scripts, and a strict reader for both.

Why one generic converter instead of hand-written ``to_dict``/``from_dict`` pairs: the model's type hints
are the schema. Walking them for both directions means a new step kind or precondition round-trips the day
it is added, and every decoding error can name the exact field path
(``plan.yaml: steps[3].payload.records[0].key_b64: not valid base64``) instead of a traceback.

The reader is strict on purpose. A plan drives writes to production clusters, so an unknown field (a typo,
or a field from a newer mm2ctl), a wrong type, an unknown step kind or a newer ``schema_version`` is a
``PlanError``, never silently ignored. Only PyYAML's *safe* loader and dumper are used (libyaml's C versions
when present): a plan file may come from anywhere and must never construct Python objects.
"""

from __future__ import annotations

import contextvars
import dataclasses
import enum
import functools
import json
import os
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mm2ctl.core.atomic_file import replaced
from mm2ctl.core.errors import PlanError
from mm2ctl.plans.document import SCHEMA_VERSION, Plan
from mm2ctl.plans.fingerprint import JSONable, digest_of, freeze_json
from mm2ctl.plans.offsets import GroupOffset
from mm2ctl.plans.steps import PAYLOAD_TYPES, Step, StepKind
from mm2ctl.plans.targets import GroupTarget

#: Field order in the written document, chosen for a reviewer reading top to bottom (what and why first,
#: the bulky machine parts last). Fields not listed follow in declaration order.
_FIELD_ORDER: dict[type[Any], tuple[str, ...]] = {
    Plan: (
        "schema_version",
        "plan_id",
        "kind",
        "description",
        "pair",
        "clusters",
        "connect",
        "mm2_config",
        "mm2_source",
        "created_at",
        "created_by_tool_version",
        "notes",
        "untranslatable",
        "steps",
        "fingerprint",
    ),
    Step: (
        "index",
        "kind",
        "description",
        "target",
        "precondition",
        "reversible",
        "irreversible_reason",
        "payload",
        "before",
        "after",
    ),
}
_TAG = "kind"  # the key naming the variant of a tagged union (targets, preconditions)
#: Fields written only when they hold something: a plan without them reads the same in an mm2ctl that predates
#: them, and one with them is refused there as an unknown field (never half-understood).
_OMITTED_WHEN_EMPTY: dict[type[Any], frozenset[str]] = {
    Plan: frozenset({"untranslatable"}),
    GroupTarget: frozenset({"group_type"}),
}


# ----------------------------------------------------------------------------------------------- encode


#: Per model class: its tag (``KIND``) and its field names in written order, worked out once per class (a
#: 100,000-row plan encodes half a million model values).
_LAYOUTS: dict[type[Any], tuple[str | None, tuple[str, ...], frozenset[str]]] = {}
_SCALARS = frozenset({str, int, bool, float, type(None)})


def _layout(cls: type[Any]) -> tuple[str | None, tuple[str, ...], frozenset[str]]:
    names = [f.name for f in dataclasses.fields(cls)]
    order = _FIELD_ORDER.get(cls, ())
    tag = getattr(cls, "KIND", None)
    layout = (
        tag if isinstance(tag, str) else None,
        (*[n for n in order if n in names], *[n for n in names if n not in order]),
        _OMITTED_WHEN_EMPTY.get(cls, frozenset()),
    )
    _LAYOUTS[cls] = layout
    return layout


def _encode(value: Any) -> JSONable:
    cls = type(value)
    if cls in _SCALARS:
        return value
    layout = _LAYOUTS.get(cls)
    if layout is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        layout = _layout(cls)
    if layout is not None:
        tag, names, omitted = layout
        out: dict[str, JSONable] = {} if tag is None else {_TAG: tag}
        for name in names:
            v = getattr(value, name)
            if name in omitted and not v:
                continue
            out[name] = v if type(v) in _SCALARS else _encode(v)
        return out
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (frozenset, set)):
        return sorted(_encode(v) for v in value)
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    return value


def plan_to_json(plan: Plan) -> dict[str, JSONable]:
    """The plan as plain JSON data: the YAML document's content, and ``mm2ctl show --json``'s output."""
    doc = _encode(plan)
    assert isinstance(doc, dict)
    return doc


def plan_document_digest(plan: Plan) -> str:
    """sha256 of the plan's canonical JSON: identifies this exact plan (the journal records it so a
    resume or rollback can prove it is working from the same document)."""
    return digest_of(plan_to_json(plan))


def _comment_safe(text: str) -> str:
    # A cluster id or alias with a newline must not be able to end the comment and inject YAML.
    return re.sub(r"[^\x20-\x7e]", "?", text)


def _header(plan: Plan) -> str:
    clusters = ", ".join(f"{a}={cid}" for a, cid in plan.clusters.items()) or "(none)"
    irreversible = [f"#{s.index} {s.kind.value}" for s in plan.steps if not s.reversible]
    lines = [
        f"mm2ctl plan (schema_version {plan.schema_version}). Review it, then: mm2ctl apply <this file>",
        f"kind: {plan.kind.value}   pair: {plan.pair or '-'}   plan_id: {plan.plan_id}",
        f"made for clusters: {clusters}",
    ]
    if plan.connect is not None:
        lines.append(f"made for the Connect worker of Kafka cluster {plan.connect.kafka_cluster_id}")
    if plan.untranslatable:
        lines.append(
            f"UNTRANSLATABLE: {len(plan.untranslatable)} group partition(s) get no offset (see untranslatable); "
            "apply refuses this plan without --allow-untranslatable"
        )
    lines += [
        f"created {plan.created_at} by mm2ctl {plan.created_by_tool_version}",
        f"steps: {len(plan.steps)}; cannot be undone by rollback: {', '.join(irreversible) or 'none'}",
        "apply re-reads live state and refuses this plan if it is stale or for other clusters.",
        "Secret config values are not stored here; apply re-obtains them (see each step's payload).",
    ]
    return "".join(f"# {_comment_safe(line)}\n" for line in lines)


#: libyaml's safe loader and dumper when PyYAML was built with it (the wheels are): same safe subset, in C
#: instead of pure Python, which a large failover plan needs to load in reasonable time.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SAFE_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


#: A plan whose body is larger than this is written in YAML's JSON-compatible flow syntax instead of block
#: style. It is still YAML (any YAML parser reads it; ``yaml.safe_load`` gives the same data), but
#: ``load_plan`` reads it with Python's C JSON parser, which writes and reads a large plan many times faster
#: than libyaml does. Smaller plans stay block YAML, the easiest to review.
FLOW_STYLE_MIN_BYTES = 2_000_000

# A JSON surrogate-pair escape: YAML 1.1 parsers read those as two lone surrogates, so such a plan stays block.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _flow_text(doc: Mapping[str, JSONable]) -> str:
    """``doc`` as JSON with one top-level field, and one step, per line: Python's C encoder (an indented dump
    runs the pure-Python one), still readable line by line. ASCII only: YAML 1.1 reads a few Unicode
    characters (NEL, LS, PS) as line breaks even inside quotes."""

    def enc(value: JSONable) -> str:
        return json.dumps(value, ensure_ascii=True, allow_nan=False)

    lines = []
    for key, value in doc.items():
        if key == "steps" and isinstance(value, list):
            steps = ",\n".join(f"  {enc(step)}" for step in value)
            lines.append(f" {enc(key)}: [\n{steps}\n ]" if value else f" {enc(key)}: []")
        else:
            lines.append(f" {enc(key)}: {enc(value)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def dump_plan(plan: Plan) -> str:
    """The plan as YAML with a comment header summarising what it is for and what cannot be undone."""
    doc = plan_to_json(plan)
    flow = _flow_text(doc)
    if len(flow) >= FLOW_STYLE_MIN_BYTES and not _SURROGATE_ESCAPE.search(flow):
        note = (
            f"# {len(flow) / 1e6:.1f} MB: written in YAML's JSON-compatible flow syntax, one step per line, "
            "so it loads in seconds\n"
        )
        return _header(plan) + note + flow + "\n"
    body = yaml.dump(doc, Dumper=_SAFE_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True, width=110)
    return _header(plan) + body


def dump_plan_json(plan: Plan) -> str:
    """The JSON view as text (stable key order, indented)."""
    return json.dumps(plan_to_json(plan), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_plan_file(plan: Plan, path: str | os.PathLike[str]) -> Path:
    """Write the YAML atomically (temp file, fsync, rename): a crash never leaves half a plan to apply."""
    target = Path(path)
    text = dump_plan(plan)
    with replaced(target, encoding="utf-8") as fh:
        fh.write(text)
    return target


# ----------------------------------------------------------------------------------------------- decode


class _DecodeError(PlanError):
    """A PlanError whose message already carries the full field path."""


_FIELD_PREFIX = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")


def _join(path: str, msg: str) -> str:
    if not path:
        return msg
    return f"{path}.{msg}" if _FIELD_PREFIX.match(msg) else f"{path}: {msg}"


def _type_name(data: object) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(data), type(data).__name__
    )


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


_FIELDS: dict[type[Any], dict[str, dataclasses.Field[Any]]] = {}


def _fields(cls: type[Any]) -> dict[str, dataclasses.Field[Any]]:
    if cls not in _FIELDS:
        _FIELDS[cls] = {f.name: f for f in dataclasses.fields(cls)}
    return _FIELDS[cls]


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


_JSON_SCALARS = frozenset({bool, int, float, str, type(None)})


def _is_frozen_json(tp: Any) -> bool:
    # get_type_hints expands the recursive ``FrozenJSON`` alias only one level (inner ForwardRefs stay), so
    # it is recognised by shape: a union of every JSON scalar type. A bare ForwardRef can only be it too.
    if isinstance(tp, typing.ForwardRef):
        return tp.__forward_arg__ == "FrozenJSON"
    return _is_union(tp) and set(typing.get_args(tp)) >= _JSON_SCALARS


@functools.cache
def _shape(tp: Any) -> tuple[str, Any]:
    """What ``_decode`` does with ``tp``, worked out once per type (a 100,000-row plan decodes millions of
    values, and ``typing`` introspection per value was most of the time)."""
    if tp is Any:
        return "any", None
    if _is_frozen_json(tp):
        return "json", None
    if _is_union(tp):
        args = typing.get_args(tp)
        options = tuple(a for a in args if a is not type(None))
        tagged = [a for a in options if isinstance(getattr(a, "KIND", None), str)]
        return "union", (type(None) in args, options, bool(tagged) and len(tagged) == len(options))
    origin = typing.get_origin(tp)
    if origin in (tuple, frozenset):
        return "list", (typing.get_args(tp)[0], origin)
    if origin in (Mapping, dict, typing.get_origin(Mapping[str, str])):
        return "mapping", typing.get_args(tp)[1]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "enum", None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return "dataclass", None
    if tp in (bool, int, float, str):
        return tp.__name__, None
    return "unknown", None


def _decode(tp: Any, data: Any, path: str) -> Any:
    shape, info = _shape(tp)
    if shape == "any":
        return data
    if shape == "json":
        try:
            return freeze_json(data, where=path or "value")
        except PlanError as exc:
            raise _DecodeError(str(exc)) from exc
    if shape == "union":
        nullable, options, tagged = info
        if data is None:
            if nullable:
                return None
            raise _DecodeError(_join(path, "must not be null"))
        if tagged:
            return _decode_tagged(list(options), data, path)
        if len(options) == 1:
            return _decode(options[0], data, path)
        for opt in options:  # e.g. int | float
            try:
                return _decode(opt, data, path)
            except _DecodeError:
                continue
        raise _DecodeError(_join(path, f"unexpected {_type_name(data)}"))
    if shape == "list":
        item, origin = info
        if not isinstance(data, list):
            raise _DecodeError(_join(path, f"expected a list, got {_type_name(data)}"))
        items = []
        one = _decode_dataclass if _shape(item)[0] == "dataclass" else _decode
        for i, v in enumerate(data):
            try:  # the element's path is spelled out only for an error: most plans are long lists
                items.append(one(item, v, ""))
            except _DecodeError as exc:
                raise _DecodeError(_join(f"{path}[{i}]", str(exc))) from exc
        return tuple(items) if origin is tuple else frozenset(items)
    if shape == "mapping":
        if not isinstance(data, dict):
            raise _DecodeError(_join(path, f"expected a mapping, got {_type_name(data)}"))
        out = {}
        for k, v in data.items():
            if not isinstance(k, str):
                raise _DecodeError(_join(path, f"key {k!r} must be a string"))
            out[k] = _decode(info, v, f"{path}.{k}" if path else k)
        return out
    if shape == "enum":
        try:
            return tp(data)
        except ValueError:
            known = ", ".join(str(m.value) for m in tp)
            raise _DecodeError(_join(path, f"unknown value {data!r} (expected one of: {known})")) from None
    if shape == "dataclass":
        return _decode_dataclass(tp, data, path)
    if shape == "bool":
        if not isinstance(data, bool):
            raise _DecodeError(_join(path, f"expected true/false, got {_type_name(data)}"))
        return data
    if shape == "int":
        if isinstance(data, bool) or not isinstance(data, int):
            raise _DecodeError(_join(path, f"expected an integer, got {_type_name(data)}"))
        return data
    if shape == "float":
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise _DecodeError(_join(path, f"expected a number, got {_type_name(data)}"))
        return float(data)
    if shape == "str":
        if not isinstance(data, str):
            raise _DecodeError(_join(path, f"expected a string, got {_type_name(data)}"))
        return data
    raise TypeError(f"plans.serialize cannot decode type {tp!r} at {path}")  # a model bug, not user input


def _decode_tagged(options: list[Any], data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _DecodeError(_join(path, f"expected a mapping, got {_type_name(data)}"))
    by_tag = {o.KIND: o for o in options}
    tag = data.get(_TAG)
    if tag is None:
        raise _DecodeError(_join(path, f"missing field '{_TAG}' (one of: {', '.join(sorted(by_tag))})"))
    cls = by_tag.get(tag)
    if cls is None:
        raise _DecodeError(_join(path, f"{_TAG}: unknown kind {tag!r} (expected one of: {', '.join(sorted(by_tag))})"))
    return _decode_dataclass(cls, {k: v for k, v in data.items() if k != _TAG}, path)


_FieldPlan = tuple[frozenset[str], tuple[tuple[str, Any, str, bool], ...]]
_FIELD_PLANS: dict[type[Any], _FieldPlan] = {}


def _field_plan(cls: type[Any]) -> _FieldPlan:
    """A model class's field names, and per field: its type, ``_fast_kind``, and whether it is required."""
    got = _FIELD_PLANS.get(cls)
    if got is None:
        got = _FIELD_PLANS[cls] = _make_field_plan(cls)
    return got


def _make_field_plan(cls: type[Any]) -> _FieldPlan:
    hints = _hints(cls)
    fields = _fields(cls)
    return frozenset(fields), tuple(
        (
            name,
            hints[name],
            _fast_kind(hints[name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for name, f in fields.items()
    )


@functools.cache
def _enum_values(tp: Any) -> frozenset[str]:
    return frozenset(str(m.value) for m in tp)


def _fast_kind(tp: Any) -> str:
    """``int``, ``str``, ``int?`` or ``str?`` (optional) for the field types ``_decode_dataclass`` checks
    inline; ``""`` for the rest, which go through ``_decode``."""
    shape, info = _shape(tp)
    if shape in ("int", "str"):
        return shape
    if shape == "union" and info[0] and len(info[1]) == 1 and info[1][0] in (int, str):
        return f"{info[1][0].__name__}?"
    if shape == "enum":
        return "enum"
    return ""


#: Model classes that are plain values (frozen, every field a scalar): one object serves every occurrence of
#: the same value in a plan. A failover plan names each group partition's offset in its write, its range check
#: and its read-back, and a group new to the target has the same "no offset" for every partition.
_VALUE_CLASSES: frozenset[type[Any]] = frozenset({GroupOffset})
_interned: contextvars.ContextVar[dict[tuple[Any, ...], Any] | None] = contextvars.ContextVar(
    "mm2ctl_plan_values", default=None
)


def _decode_dataclass(cls: type[Any], data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _DecodeError(_join(path, f"expected a mapping, got {_type_name(data)}"))
    if cls in _VALUE_CLASSES:
        seen = _interned.get()
        if seen is not None:
            try:
                key = (cls, *((k, type(v), v) for k, v in sorted(data.items())))
                got = seen.get(key)
            except TypeError:  # an unhashable value: decoded (and refused) the long way
                key, got = None, None
            if got is not None:
                return got
            obj = _decode_fields(cls, data, path)
            if key is not None:
                seen[key] = obj
            return obj
    return _decode_fields(cls, data, path)


def _decode_fields(cls: type[Any], data: dict[str, Any], path: str) -> Any:
    names, plan = _field_plan(cls)
    if not names.issuperset(data):
        unknown = sorted(str(k) for k in data if k not in names)
        raise _DecodeError(_join(path, f"unknown field(s) {', '.join(unknown)}"))
    kwargs: dict[str, Any] = {}
    for name, tp, shape, required in plan:
        if name not in data:
            if required:
                raise _DecodeError(_join(path, f"missing field '{name}'"))
            continue
        v = data[name]
        # Plain integers and strings (or nulls where allowed), most of a plan's values, skip the general decoder.
        if shape and (
            (type(v) is int and shape[:3] == "int")
            or (type(v) is str and shape[:3] == "str")
            or (v is None and shape[-1:] == "?")
        ):
            kwargs[name] = v
            continue
        if shape == "enum" and type(v) is str and v in _enum_values(tp):
            kwargs[name] = tp(v)
            continue
        if cls is Step and name == "payload":
            continue  # decoded below, once the kind is known
        kwargs[name] = _decode(tp, v, f"{path}.{name}" if path else name)
    if cls is Step and "payload" in data:
        kind = kwargs["kind"]
        assert isinstance(kind, StepKind)
        kwargs["payload"] = _decode_dataclass(
            PAYLOAD_TYPES[kind], data["payload"], f"{path}.payload" if path else "payload"
        )
    try:
        return cls(**kwargs)
    except _DecodeError:
        raise
    except PlanError as exc:
        raise _DecodeError(_join(path, str(exc))) from exc


def plan_from_json(doc: Any, *, source: str = "plan") -> Plan:
    """Build a ``Plan`` from parsed JSON/YAML data; any problem is a ``PlanError`` naming ``source`` and the
    field path."""
    if not isinstance(doc, dict):
        raise PlanError(f"{source}: not an mm2ctl plan (expected a mapping at the top level, got {_type_name(doc)})")
    version = doc.get("schema_version")
    if "schema_version" not in doc:
        raise PlanError(f"{source}: schema_version: missing (is this an mm2ctl plan?)")
    if isinstance(version, bool) or not isinstance(version, int):
        raise PlanError(f"{source}: schema_version: expected an integer, got {_type_name(version)}")
    if version > SCHEMA_VERSION:
        raise PlanError(
            f"{source}: schema_version: {version} is newer than this mm2ctl understands "
            f"(it reads version {SCHEMA_VERSION}); upgrade mm2ctl"
        )
    token = _interned.set({})
    try:
        plan = _decode_dataclass(Plan, doc, "")
    except PlanError as exc:
        raise PlanError(f"{source}: {exc}") from exc
    finally:
        _interned.reset(token)
    assert isinstance(plan, Plan)
    return plan


def load_plan(source: str | os.PathLike[str], *, name: str | None = None) -> Plan:
    """Read a plan from a path (``os.PathLike``) or from document text (``str``); YAML or JSON.

    A ``str`` is always document text, never a path: guessing would make a file named like YAML text (or
    text that happens to name a file) load the wrong thing.
    """
    return load_plan_document(source, name=name)[0]


def load_plan_document(source: str | os.PathLike[str], *, name: str | None = None) -> tuple[Plan, dict[str, JSONable]]:
    """``load_plan``, and the JSON document the plan was decoded from (apply embeds it in the journal as
    read, rather than encoding the plan again)."""
    if isinstance(source, os.PathLike):
        label = name or os.fspath(source)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise PlanError(f"{label}: not a UTF-8 text file") from exc
        except OSError as exc:
            raise PlanError(f"{label}: cannot read plan file: {exc.strerror or exc}") from exc
    else:
        label = name or "plan"
        text = source
    doc = _flow_document(text)
    try:
        if doc is None:
            doc = yaml.load(text, Loader=_SAFE_LOADER)  # a safe loader: libyaml's or PyYAML's
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{label}:{mark.line + 1}:{mark.column + 1}" if mark is not None else label
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PlanError(f"{where}: not valid YAML: {problem}") from exc
    return plan_from_json(doc, source=label), doc


def _flow_document(text: str) -> Any:
    """The document of a plan written in JSON-compatible flow syntax (``dump_plan`` does for large plans), read
    with the C JSON parser; None when the text is not strict JSON after its comment header, so the YAML
    parser reads it (and reports where anything is wrong)."""
    start = 0
    while text.startswith("#", start):
        newline = text.find("\n", start)
        if newline < 0:
            return None
        start = newline + 1
    if text[start : start + 1] != "{":
        return None
    try:
        return json.loads(text[start:])
    except ValueError:
        return None


def model_to_json(value: object) -> JSONable:
    """Encode any model value (a step, a payload, a precondition) exactly as plan files do."""
    return _encode(value)
