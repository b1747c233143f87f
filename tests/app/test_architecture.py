"""The shape of the code: no import cycle among the project's modules, the engine free of Django,
and no branch on a format's name outside the format modules and their registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agora", "debates", "personas", "testkit")
FORMAT_MODULES = {f"debates/engine/{name}.py" for name in ("duel", "panel", "roundtable", "moderated", "registry")}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def module_level_imports(path: Path, known: set[str]) -> set[str]:
    """Project modules imported at import time (not inside functions or `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for child in [node] if not isinstance(node, ast.Try) else node.body:
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                names = [f"{child.module}.{alias.name}" for alias in child.names] + [child.module]
            else:
                continue
            for name in names:
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name:
                    targets.add(name)
    return targets


def test_no_import_cycle_among_project_modules():
    found = modules()
    graph = {name: module_level_imports(path, set(found)) - {name} for name, path in found.items()}
    assert len(graph) > 40, "the walk found the project's modules"
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(trail[trail.index(target) :] + [target])
            elif target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, cycles


def test_the_engine_imports_no_django():
    for path in (ROOT / "debates" / "engine").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from|import) (django|channels|debates\.(models|views|runner))", source, re.M), path


def test_no_format_name_branches_outside_the_format_modules():
    literal = re.compile(r"""["'](duel|panel|roundtable|moderated)["']""")
    offenders = []
    for path in modules().values():
        relative = path.relative_to(ROOT).as_posix()
        if relative in FORMAT_MODULES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            # A persona *tier* is called "panel" too (Persona.Tier.PANEL_ROLE): not a format.
            if literal.search(line) and "PANEL_ROLE" not in line and '"master", "panel"' not in line:
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, offenders
