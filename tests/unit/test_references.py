"""References that stay true: every repository path and every module the documents and docstrings name exists.

The texts read: ``README.md``, ``CHANGELOG.md``, every page under ``docs/`` and ``bench/README.md``, and the
docstrings of every module, class and function of the package, the tests and the benchmarks. What counts as a
reference:

- a path that starts at one of the repository's top-level folders (``inspector/job.py``, ``docs/design.md``):
  it must exist from the repository's root; a Markdown link's target, from the page's own folder;
- a dotted module name that starts with ``mm2ctl.`` or one of the package's parts (``core.kafka.admin``,
  ``inspector.opening.open_inspection``): its longest prefix that is a module must be followed by nothing, or
  by a name that module defines at its top level.

A text that names a module that moved, a file that was renamed or a page that was never written fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import mm2ctl

REPO = Path(__file__).parents[2]
PACKAGE = Path(mm2ctl.__file__).parent
PARTS = ("core", "connect_client", "inspector", "plans", "remediate", "lab", "drill", "report", "cli")
FOLDERS = (*PARTS, "src", "tests", "docs", "bench", "examples", ".ci")
PAGES = ("README.md", "CHANGELOG.md", "bench/README.md", *(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")))

_PATH = re.compile(r"(?<![\w./~…-])((?:" + "|".join(re.escape(f) for f in FOLDERS) + r")/[\w./-]*)")
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_DOTTED = re.compile(r"(?<![\w./-])((?:mm2ctl\.)?(?:" + "|".join(PARTS) + r")(?:\.\w+)+)")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("mm2ctl", *path.relative_to(PACKAGE).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _docstrings() -> Iterator[tuple[str, str]]:
    roots = [PACKAGE, *(REPO / p for p in PARTS if (REPO / p).is_dir()), REPO / "tests", REPO / "bench"]
    seen: set[Path] = set()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(node, clean=False)
                    if doc:
                        yield str(real.relative_to(REPO.resolve())), doc


def _texts() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        yield page, (REPO / page).read_text(encoding="utf-8")
    yield from _docstrings()


def _module_reference_is_true(name: str) -> bool:
    full = name if name.startswith("mm2ctl.") else f"mm2ctl.{name}"
    parts = full.split(".")
    for cut in range(len(parts), 1, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            rest = parts[cut:]
            return not rest or rest[0] in _top_level_names(MODULES[module])
    return False


#: What ends a file name that looks like a dotted module name (``lab.json``, ``docs/report.md``).
_EXTENSIONS = frozenset({"json", "jsonl", "html", "md", "png", "yaml", "csv", "py", "properties", "xml", "prom"})


def _is_module_reference(name: str) -> bool:
    """Whether a dotted name is meant as a module: not a file name, and not the lab object's attribute
    (``lab.add_flow``, ``lab.target.bootstrap``: tests and docs call a running lab ``lab``)."""
    if name.rsplit(".", 1)[-1] in _EXTENSIONS:
        return False
    return not (name.startswith("lab.") and f"mm2ctl.{name.split('.')[0]}.{name.split('.')[1]}" not in MODULES)


def _wrong_references(where: str, text: str) -> Iterator[str]:
    for match in _PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if not (REPO / path).exists():
            yield f"{where}: path {path}"
    if where.endswith(".md"):
        for match in _LINK.finditer(text):
            target = match.group(1)
            if "://" not in target and not (REPO / where).parent.joinpath(target).exists():
                yield f"{where}: link {target}"
    for match in _DOTTED.finditer(text):
        name = match.group(1).rstrip(".")
        if _is_module_reference(name) and not _module_reference_is_true(name):
            yield f"{where}: module {name}"


def test_every_path_and_module_named_exists() -> None:
    wrong = [w for where, text in _texts() for w in _wrong_references(where, text)]
    assert not wrong, "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("see ``core.kafka.admin.KafkaAdmin``", False),
        ("see ``core.kafka.admin.NoSuchThing``", True),
        ("see ``core.no_such_module``", True),
        ("see `inspector/job.py` and docs/design.md", False),
        ("see docs/spark_checkpoints.md", True),
        ("the lab writes lab.json; lab.add_flow adds a flow", False),
        ("see ``lab.no_such_module.f``", False),
        ("see ``mm2ctl.lab.no_such_module``", True),
    ],
)
def test_the_check_tells_a_true_reference_from_a_stale_one(text: str, wrong: bool) -> None:
    assert bool(list(_wrong_references("x.py", text))) is wrong
