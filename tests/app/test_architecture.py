"""The shape of the code: no import cycle among the project's modules (counting every import),
personas below debates, the engine, the providers and search free of Django, no door importing
another, no branch on a format's name outside the format modules and their registry, and no front
door that writes a format's option down itself."""

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


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Every project module `name` (at `path`) imports, wherever the import is written: at the top,
    inside a function or a method, under `if TYPE_CHECKING:` or in a `try`. Relative imports are
    resolved against the module's package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - (node.level - 1)]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for imported in names:
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
    return targets


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(path, name, set(found)) for name, path in found.items()}


def cycles_in(graph: dict[str, set[str]]) -> list[list[str]]:
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
    return cycles


def test_the_walk_sees_imports_inside_functions_and_type_checking(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
        "def f():\n    from . import c\n    import pkg.d\n"
    )
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"}
    assert imports(package / "a.py", "pkg.a", known) == {"pkg", "pkg.b", "pkg.c", "pkg.d"}
    assert cycles_in({"x": {"y"}, "y": {"x"}}) == [["x", "y", "x"]]


def test_no_import_cycle_among_project_modules():
    """Counting every import: a function-level or TYPE_CHECKING import that doubles back is a
    circle too (a Protocol, a module both sides share, or a hook at `ready()` breaks it)."""
    graph = import_graph()
    assert len(graph) > 40, "the walk found the project's modules"
    cycles = cycles_in(graph)
    assert not cycles, cycles


def test_personas_imports_nothing_of_debates():
    """personas sits below debates (the debates app hands its formats over at ready())."""
    upwards = sorted(
        f"{name} → {target}"
        for name, targets in import_graph().items()
        if name.split(".")[0] == "personas"
        for target in targets
        if target.split(".")[0] == "debates"
    )
    assert not upwards, upwards


def test_no_door_imports_another():
    """The pages' views are one door among the API, the terminal and those to come: what doors
    share (the exports, sharing, access) lives in modules of its own, so only the URL conf imports
    the views, and only the routing the WebSocket consumer."""
    graph = import_graph()
    assert sorted(name for name, targets in graph.items() if "debates.views" in targets) == ["debates.urls"]
    assert sorted(name for name, targets in graph.items() if "debates.consumers" in targets) == ["debates.routing"]


def test_a_debates_download_is_named_in_one_place():
    """Every door sends the same Content-Disposition for a debate's files (`exports.attachment`)."""
    writers = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "debates").rglob("*.py")
        if "Content-Disposition" in path.read_text(encoding="utf-8")
    )
    assert writers == ["debates/exports.py"], writers


# Plain async Python, testable and reusable without a Django project: settings and rows reach them
# as arguments. They import one another and the standard library or their own third-party
# clients (openai, httpx2, trafilatura…), never Django, Channels or the web app's modules.
DJANGO_FREE = ("debates/engine", "debates/providers", "debates/search")
WEB_SIDE = ("django", "channels", "asgiref", "ninja", "django_htmx", "django_tasks", "daphne", "agora", "personas")


def web_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of the web side, wherever it is written (a function, a
    `try`, `if TYPE_CHECKING:`): Django and its kin, and any project module outside DJANGO_FREE."""
    found = []
    free = tuple(package.replace("/", ".") for package in DJANGO_FREE)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "debates":  # `from debates import models`
                names = [f"debates.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in WEB_SIDE or (top == "debates" and name != "debates" and not name.startswith(free)):
                found.append((node.lineno, name))
    return found


def test_the_django_free_guard_sees_an_import_inside_a_function():
    source = "def f():\n    from django.conf import settings\n    from debates import models\n"
    source += "    import debates.runner\n"
    assert [name for _line, name in web_imports(source)] == ["django.conf", "debates.models", "debates.runner"]
    assert web_imports("from debates.engine import text\nfrom debates.search.errors import SearchError\n") == []


def test_the_engine_providers_and_search_import_no_django():
    offenders = []
    for package in DJANGO_FREE:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, name in web_imports(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {name}")
    assert not offenders, offenders


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


# The front doors whose option fields, schema properties and flags are made from the formats'
# own descriptions (`debates.options`); none of them may write an option down a second time.
DOORS = (
    "debates/forms.py",
    "debates/api/schemas.py",
    "debates/management/commands/debate.py",
    "debates/mcp/tools.py",
    "debates/mcp/server.py",
    "debates/as_model/request.py",
    "debates/as_model/views.py",
)


def written_names(source: str) -> dict[str, int]:
    """The names a module writes down itself, with a line: its string constants (a flag's dashes
    read as underscores: `--no-interrupt`), the fields its classes declare, and its
    `clean_<name>` methods. A call's keyword (`Debate(research=...)`, `mode="before"`) names the
    callee's parameter, not an option."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.setdefault(node.value.lstrip("-").replace("-", "_"), node.lineno)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = [item.target] if isinstance(item, ast.AnnAssign) else getattr(item, "targets", [])
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, item.lineno)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("clean_"):
            found.setdefault(node.name.removeprefix("clean_"), node.lineno)
    return found


def option_names() -> set[str]:
    from debates.engine import registry
    from debates.engine.options import describe

    return {name for fmt in registry.all_formats() for name in describe(fmt.Options)}


def test_the_guard_sees_an_option_written_down():
    source = """
class DebateForm(forms.Form):
    rounds = forms.IntegerField()
class DebateStart(Schema):
    max_chars: int | None = None
def add_arguments(parser):
    parser.add_argument("--no-interrupt", action="store_true")
    parser.add_argument("--budget", dest="research_budget")
def clean_evidence(self): ...
"""
    assert {"rounds", "max_chars", "no_interrupt", "research_budget", "evidence"} <= set(written_names(source))
    assert not {"research", "mode"} & set(written_names("Debate.objects.create(research=True)\nvalidator(mode='x')"))


def test_no_front_door_writes_down_a_formats_option():
    names = option_names()
    assert {"rounds", "research_budget", "no_interrupt", "max_chars", "token_budget", "evidence"} <= names
    offenders = []
    for door in DOORS:
        for name, line in written_names((ROOT / door).read_text(encoding="utf-8")).items():
            if name in names:
                offenders.append(f"{door}:{line}: {name}")
    assert not offenders, "declare it once, in the format's Options (debates/engine/options.py): " + str(offenders)
