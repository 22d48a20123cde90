"""Names that do not collide: a class name means one class in the whole package, and a module name one module.

Two modules may share a name only when they are one concept in two layers, listed in ``SAME_CONCEPT``, and each
one's docstring names the other, so a reader who finds one learns of the other. A package counts as a module
here (``core/kafka/`` and a ``kafka.py`` elsewhere would collide). The inspector's parts are named for what they
hold, so no module of it is a vague ``*_state``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import mm2ctl

PACKAGE = Path(mm2ctl.__file__).parent

#: Module names two layers share on purpose: name -> the two modules (each docstring names the other).
SAME_CONCEPT: dict[str, tuple[str, ...]] = {
    "translation": ("mm2ctl.core.translation", "mm2ctl.inspector.rules.translation"),
}


def _module(path: Path) -> str:
    parts = ("mm2ctl", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_two_classes_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{_module(path)}:{node.lineno}")
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert not shared, shared


def test_no_two_modules_share_a_name_unless_one_concept_in_two_layers() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in _sources():
        module = _module(path)
        if path.name not in ("__init__.py", "__main__.py"):
            where[path.stem].append(module)
        elif path.name == "__init__.py" and module != "mm2ctl":
            where[module.rsplit(".", 1)[-1]].append(module)
    shared = {name: tuple(sorted(m)) for name, m in where.items() if len(m) > 1}
    unexplained = {name: modules for name, modules in shared.items() if SAME_CONCEPT.get(name) != modules}
    assert not unexplained, unexplained
    for modules in SAME_CONCEPT.values():
        for module in modules:
            doc = ast.get_docstring(ast.parse((PACKAGE / _relative(module)).read_text(encoding="utf-8"))) or ""
            others = [m for m in modules if m != module]
            assert all(o.removeprefix("mm2ctl.") in doc for o in others), f"{module}'s docstring names {others}"


def _relative(module: str) -> Path:
    path = Path(*module.split(".")[1:])
    return path.with_suffix(".py") if (PACKAGE / path.with_suffix(".py")).exists() else path / "__init__.py"


def test_the_inspector_names_its_modules_for_what_they_hold() -> None:
    vague = [_module(p) for p in (PACKAGE / "inspector").rglob("*_state.py")]
    assert not vague, vague
