"""The installed package's import graph points one way: no cycle between modules, and each layer imports
only the layers below it, never a sibling in its own layer (docs/design.md, "Parts"):

    core  <  connect_client  <  inspector  <  plans, lab  <  remediate  <  drill, report  <  cli

Inside ``core`` and ``inspector`` their sub-packages and top-level modules obey the same rule, in the order
``INNER_LAYERS`` gives. ``LAYERS`` and ``INNER_LAYERS`` are the one list: this docstring, docs/design.md's
three drawings and ``src/mm2ctl/__init__.py``'s are each checked against them.

The translation rule (``core.translation``) sits in the core because both ``inspect`` and the planners apply
it; the planners read MM2's position through ``inspector.reads.mm2_position`` and the lab's Spark Connect
server is built by ``inspector.spark.packages``, so the inspector sits below both.

Every module of the installed ``mm2ctl`` is parsed with ``ast``, not imported, so an import inside a function
(a lazy import) counts as much as one at the top: it runs too, only later.

Imports under ``if TYPE_CHECKING:`` never run. They are left out of the cycle check (a type-only import
back up a module pair is how two modules name each other's types without a runtime cycle), but they still
obey the layering: a lower layer does not even name a higher layer's types.

``from mm2ctl.a import b`` is an edge to the module ``mm2ctl.a.b`` when that module exists, otherwise to
the package ``mm2ctl.a`` (its ``__init__``). Importing a submodule also runs its parents' ``__init__``;
those implicit edges are not counted, since a package that re-exports its submodules would otherwise
always look like a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import mm2ctl

ROOT = Path(mm2ctl.__file__).parent

#: The layers, lowest first, as the module docstring and docs/design.md draw them.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("connect_client",),
    ("inspector",),
    ("plans", "lab"),
    ("remediate",),
    ("drill", "report"),
    ("cli",),
)

#: Inside a part, its sub-packages and top-level modules, lowest first, as docs/design.md draws them.
INNER_LAYERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "core": (
        ("exit_codes",),
        ("errors",),
        ("atomic_file", "patterns", "polling", "progress"),
        ("java", "security", "spark_checkpoints"),
        ("kafka",),
        ("config", "translation"),
    ),
    "inspector": (
        ("spark",),
        ("schemas", "selection", "statuses"),
        ("rules",),
        ("reads",),
        ("output",),
        ("transforms",),
        ("kept",),
        ("driver_sizing", "exact"),
        ("inspection",),
        ("opening",),
        ("exporter", "job"),
    ),
}


def _allowed(layers: tuple[tuple[str, ...], ...]) -> dict[str, set[str]]:
    """Which units each unit of ``layers`` may import (itself always allowed): every layer below its own."""
    return {
        unit: {below for lower in layers[:level] for below in lower}
        for level, layer in enumerate(layers)
        for unit in layer
    }


#: Which subpackages each subpackage may import.
ALLOWED = _allowed(LAYERS)

#: Third-party clients the CLI must leave to the layers below it (a thin CLI over a pure core).
CLI_FORBIDDEN = ("requests", "confluent_kafka")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    type_only: bool


def _module_name(path: Path) -> str:
    parts = ("mm2ctl", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    found = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    assert "mm2ctl.cli.main" in found and "mm2ctl.core.errors" in found, sorted(found)
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, type_only: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement in ``tree``, at any depth, with whether it sits under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, type_only
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), type_only=True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), type_only=type_only)
        else:
            yield from _imports(node, type_only=type_only)


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names, resolving ``from . import x`` and ``from ..a import b``."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    source = _absolute(module, node)
    for alias in node.names:
        child = f"{source}.{alias.name}"
        yield child if child in MODULES else source


def _edges() -> list[Edge]:
    edges = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, type_only in _imports(tree):
            for target in _targets(module, node):
                edges.append(Edge(module, target, node.lineno, type_only))
    return edges


EDGES = _edges()


def _subpackage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "mm2ctl" and parts[1] in ALLOWED else None


def _unit(module: str, part: str) -> str | None:
    """The sub-package or top-level module of ``part`` that ``module`` lies in (``mm2ctl.core.kafka.admin`` ->
    ``kafka``), or None when it lies outside ``part`` or is the part's own ``__init__``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["mm2ctl", part] else None


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends at the same module, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_graph_is_read_from_the_installed_package() -> None:
    internal = [e for e in EDGES if e.target.startswith("mm2ctl")]
    assert len(internal) > 100
    unknown = sorted({e.target for e in internal if e.target not in MODULES})
    assert not unknown, f"imports of modules the package does not hold: {unknown}"


def test_no_import_cycle_between_modules() -> None:
    graph: dict[str, set[str]] = {}
    for e in EDGES:
        if e.target in MODULES and e.target != e.source and not e.type_only:
            graph.setdefault(e.source, set()).add(e.target)
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    wrong = [
        f"{e.source}:{e.line} imports {e.target}" + (" (under TYPE_CHECKING)" if e.type_only else "")
        for e in EDGES
        if _subpackage(e.source) == layer
        and (target := _subpackage(e.target)) not in (None, layer)
        and target not in ALLOWED[layer]
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("part", sorted(INNER_LAYERS))
def test_inside_a_part_each_unit_imports_only_the_units_below_it(part: str) -> None:
    allowed = _allowed(INNER_LAYERS[part])
    units = {u for m in MODULES if (u := _unit(m, part)) is not None}
    assert units == set(allowed), f"{part}: units not in INNER_LAYERS, or named there and gone"
    wrong = [
        f"{e.source}:{e.line} imports {e.target}" + (" (under TYPE_CHECKING)" if e.type_only else "")
        for e in EDGES
        if (source := _unit(e.source, part)) is not None
        and (target := _unit(e.target, part)) not in (None, source)
        and target not in allowed[source]
    ]
    assert not wrong, "\n".join(wrong)


def _drawn(lines: list[str], names: set[str]) -> tuple[tuple[str, ...], ...]:
    """The layers of a drawing, lowest first: each line's leading ``names`` (a line per layer, top first)."""
    layers = []
    for line in lines:
        found = []
        for word in line.split():
            if word not in names:
                break
            found.append(word)
        if found:
            layers.append(tuple(found))
    return tuple(reversed(layers))


def _drawings() -> list[str]:
    """The code blocks of docs/design.md's "Parts" section, in order."""
    design = (Path(__file__).parents[2] / "docs" / "design.md").read_text(encoding="utf-8")
    section = design.split("## Parts", 1)[1].split("\n## ", 1)[0]
    return section.split("```")[1::2]


def test_the_docstring_and_docs_design_draw_the_layers_the_table_enforces() -> None:
    line = next(li for li in (__doc__ or "").splitlines() if li.strip().startswith("core "))
    docstring = tuple(tuple(p.strip() for p in layer.split(",")) for layer in line.split("<"))
    assert docstring == LAYERS
    outer, core, inspector = _drawings()
    assert _drawn(outer.splitlines(), set(ALLOWED)) == LAYERS
    assert _drawn(core.splitlines(), set(_allowed(INNER_LAYERS["core"]))) == INNER_LAYERS["core"]
    assert _drawn(inspector.splitlines(), set(_allowed(INNER_LAYERS["inspector"]))) == INNER_LAYERS["inspector"]


def test_the_package_docstring_draws_the_same_layers() -> None:
    assert _drawn((mm2ctl.__doc__ or "").splitlines(), set(ALLOWED)) == LAYERS


def test_the_cli_leaves_kafka_and_http_clients_to_the_core() -> None:
    wrong = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in EDGES
        if _subpackage(e.source) == "cli" and e.target.split(".")[0] in CLI_FORBIDDEN
    ]
    assert not wrong, "\n".join(wrong)


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}}) is None
