"""The house's import rules, checked on the source: no import cycle between modules, no upward edge.

The layer order is read from the "Import direction" block of ``docs/architecture.md``, so the page and
this test cannot drift apart. How imports are counted:

- Module-level imports and imports inside functions both count, for cycles and for direction: a lazy
  import is still a dependency, and a cycle closed by one still runs (often at the worst time, in a
  worker). No cycle is allowed, lazy or not.
- Imports under ``if TYPE_CHECKING:`` count for direction (a type is part of a module's design) but not
  for cycles (they never run).
- ``import a.b.c`` is an edge to ``a.b.c``; ``from a.b import c`` is an edge to ``a.b`` (its
  ``__init__`` runs and is read) and, when ``a.b.c`` is a module, to ``a.b.c`` too. So a module that
  imports a sibling through its package (``from resonance_os.generation import edits``) depends on the
  package's ``__init__``, and closes a cycle when that ``__init__`` imports the module back.
- Parent packages that Python initialises on the way (``resonance_os``, ``resonance_os.x``) are not
  edges: each is set up before its child runs, so reading nothing from it is always safe.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "src"
PAGE = REPO / "docs" / "architecture.md"
ROOT = "resonance_os"
FACADE = "resonance_os (package)"
"""The layer of ``resonance_os/__init__.py``: the top-level names of the original ResonanceOS."""
MODULE_LAYERS = {"resonance_os.quality.reward": "reward"}
"""Modules whose layer is not their folder's (docs/architecture.md says why)."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    runs: bool
    """False for imports under ``if TYPE_CHECKING:``."""


def module_files(source: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``source`` (a src-layout root)."""
    modules = {}
    for path in sorted(source.rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """``name`` or its longest prefix that is one of ``modules``."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_names(node: ast.Import | ast.ImportFrom, package: str, modules: dict[str, Path]) -> list[str]:
    """The dotted names an import statement in ``package`` depends on (see the module docstring)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)]


def _module_edges(name: str, path: Path, modules: dict[str, Path], root: str) -> list[Edge]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges = []

    def visit(node: ast.AST, runs: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), False)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), runs)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _imported_names(child, package, modules):
                    found = _known(target, modules) if target.split(".")[0] == root else None
                    if found is not None and found != name:
                        edges.append(Edge(name, found, child.lineno, runs))
            else:
                visit(child, runs)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), True)
    return edges


def import_edges(source: Path, root: str = ROOT) -> list[Edge]:
    """Every import of a module of ``root`` by a module of ``root``, anywhere in the file."""
    modules = module_files(source)
    return [edge for name, path in modules.items() for edge in _module_edges(name, path, modules, root)]


def find_cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges) per strongly connected group of modules, over imports that run."""
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        if edge.runs:
            graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm; the package has no deep import chains
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_cycle_in(sorted(group), graph) for group in groups]


def _cycle_in(group: list[str], graph: dict[str, dict[str, Edge]]) -> list[Edge]:
    """A shortest cycle through ``group[0]`` inside ``group`` (breadth-first)."""
    start, members = group[0], set(group)
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt, edge in sorted(graph.get(node, {}).items()):
                if nxt == start:
                    return [*paths[node], edge]
                if nxt in members and nxt not in paths:
                    paths[nxt] = [*paths[node], edge]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group always has one


def read_layers(page: Path) -> dict[str, frozenset[str]]:
    """Layer -> the layers it may import, from the page's "Import direction" block.

    Each line reads ``a, b ──► x, y: comment``; ``everything below`` means every layer named on a later
    line, ``nothing of ours`` none; ``or``/``only`` are words, not layers.
    """
    block = re.search(r"## Import direction.*?```\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert block, f"{page} has no 'Import direction' block"
    rows = []
    for line in block.group(1).splitlines():
        left, _, right = line.partition("──►")
        names = [n.strip() for n in left.split(",") if n.strip()]
        allowed = right.split(":")[0].replace(" or ", ", ").replace(" only", "")
        rows.append((names, [a.strip() for a in allowed.split(",") if a.strip()]))
    layers: dict[str, frozenset[str]] = {}
    for i, (names, allowed) in enumerate(rows):
        below = {n for later, _ in rows[i + 1 :] for n in later}
        if allowed == ["everything below"]:
            allowed = sorted(below)
        elif allowed == ["nothing of ours"]:
            allowed = []
        unknown = set(allowed) - below
        assert not unknown, f"{page}: {', '.join(names)} may import {sorted(unknown)}, which is not below it"
        for name in names:
            layers[name] = frozenset(allowed)
    return layers


def layer_of(module: str) -> str:
    if module in MODULE_LAYERS:
        return MODULE_LAYERS[module]
    parts = module.split(".")
    return FACADE if len(parts) == 1 else parts[1]


def upward_edges(edges: Iterable[Edge], layers: dict[str, frozenset[str]]) -> list[str]:
    """A line per edge that goes against ``layers`` (or leaves a module in no layer)."""
    problems = []
    for edge in edges:
        source, target = layer_of(edge.source), layer_of(edge.target)
        if source not in layers:
            problems.append(f"{edge.source}: its layer {source!r} is not in {PAGE.name}; place it there")
        elif source != target and target not in layers[source]:
            problems.append(
                f"{edge.source} (line {edge.line}) imports {edge.target}: {source} may import "
                f"{', '.join(sorted(layers[source])) or 'nothing of ours'}, not {target}"
            )
    return sorted(set(problems))


HOW_TO_BREAK = (
    "import cycles (move what both sides need into a lower module; where a module reaches its own package's "
    "__init__ through `from pkg import sibling`, import the sibling by its full name: "
    "`import pkg.sibling as sibling`):\n"
)


def _describe(cycle: list[Edge]) -> str:
    return " -> ".join(f"{e.source} (line {e.line})" for e in cycle) + f" -> {cycle[0].source}"


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges(SOURCE)


def test_no_import_cycle(edges: list[Edge]) -> None:
    cycles = find_cycles(edges)
    assert not cycles, HOW_TO_BREAK + "\n".join(map(_describe, cycles))


def test_imports_point_down_the_layers(edges: list[Edge]) -> None:
    problems = upward_edges(edges, read_layers(PAGE))
    assert not problems, "imports against docs/architecture.md's layers:\n" + "\n".join(problems)


def test_every_package_has_a_layer() -> None:
    layers = read_layers(PAGE)
    packages = {layer_of(m) for m in module_files(SOURCE) if m.split(".")[0] == ROOT}
    assert packages <= set(layers), f"place {sorted(packages - set(layers))} in {PAGE}'s Import direction"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_walker_finds_cycles_through_functions_and_packages(tmp_path: Path) -> None:
    source = _write(
        tmp_path,
        {
            "resonance_os/__init__.py": "",
            "resonance_os/gen/__init__.py": "from resonance_os.gen.writer import Writer\n",
            "resonance_os/gen/writer.py": "from resonance_os.gen.refiner import refine\nclass Writer: ...\n",
            # reaches its own package's __init__, which imports it back through writer.py
            "resonance_os/gen/refiner.py": "from resonance_os.gen import edits\ndef refine(): ...\n",
            "resonance_os/gen/edits.py": "",
            "resonance_os/evo/__init__.py": "",
            "resonance_os/evo/run.py": "def f():\n    from resonance_os.evo.train import g\n",
            "resonance_os/evo/train.py": "from . import run\ndef g(): ...\n",
            "resonance_os/evo/typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from resonance_os.evo import train\n"
            ),
            "resonance_os/evo/uses_typed.py": "",
        },
    )
    cycles = sorted(sorted(e.source for e in cycle) for cycle in find_cycles(import_edges(source)))
    assert cycles == [
        ["resonance_os.evo.run", "resonance_os.evo.train"],
        ["resonance_os.gen", "resonance_os.gen.refiner", "resonance_os.gen.writer"],
    ]


def test_the_layer_check_names_an_upward_edge(tmp_path: Path) -> None:
    page = (
        _write(
            tmp_path,
            {
                "page.md": "## Import direction (down)\n```\ncli ──► everything below\n"
                "quality ──► core only: measured terms\ncore ──► nothing of ours\n```\n"
            },
        )
        / "page.md"
    )
    layers = read_layers(page)
    assert layers == {"cli": {"quality", "core"}, "quality": {"core"}, "core": frozenset()}
    source = _write(
        tmp_path / "src",
        {
            "resonance_os/__init__.py": "",
            "resonance_os/core/__init__.py": "",
            "resonance_os/core/text.py": "def split():\n    from resonance_os.quality import fluency\n",
            "resonance_os/quality/__init__.py": "",
            "resonance_os/quality/fluency.py": "from resonance_os.core.text import split\n",
        },
    )
    assert upward_edges(import_edges(source), layers) == [
        f"resonance_os.core.text (line 2) imports resonance_os.quality{module}: core may import nothing "
        "of ours, not quality"
        for module in (".fluency", "")
    ]
