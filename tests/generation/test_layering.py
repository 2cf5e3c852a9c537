"""Generation sits below the profiles layer: targets arrive resolved (ARCHITECTURE.md, import direction)."""

import ast
import importlib.util
from pathlib import Path

import resonance_os.generation

FORBIDDEN = "resonance_os.profiles"
PACKAGE = Path(resonance_os.generation.__file__).parent


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source`` (a module of ``package``), nested and
    relative ones included, and of every ``import_module("...")`` with a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def test_no_generation_module_imports_the_profiles_layer():
    sources = sorted(PACKAGE.rglob("*.py"))
    assert PACKAGE / "human_resonant_writer.py" in sources and PACKAGE / "backends" / "base.py" in sources
    offending = []
    for path in sources:
        package = ".".join(("resonance_os", *path.relative_to(PACKAGE.parent).parent.parts))
        for line, module in imported_modules(path.read_text(encoding="utf-8"), package):
            if module == FORBIDDEN or module.startswith(FORBIDDEN + "."):
                offending.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert offending == [], "generation takes resolved targets; it must not import profiles:\n" + "\n".join(
        offending
    )


def test_the_checker_sees_nested_relative_and_dynamic_imports():
    source = (
        "def f():\n"
        "    from resonance_os.profiles.targets import resolve_target\n"
        "from ...profiles import templates\n"
        "from .. import profiles\n"
        "import importlib\n"
        "importlib.import_module('resonance_os.profiles.storage')\n"
    )
    modules = {m for _, m in imported_modules(source, "resonance_os.generation.backends")}
    assert {
        "resonance_os.profiles.targets",
        "resonance_os.profiles.templates",
        "resonance_os.generation.profiles",
        "resonance_os.profiles.storage",
    } <= modules


def test_the_deprecated_defaults_module_is_gone():
    assert importlib.util.find_spec("resonance_os.generation.defaults") is None
