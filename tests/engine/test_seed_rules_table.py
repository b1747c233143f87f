"""docs/seed-rules.md maps every seed rule Agora enforces to its code and its test: each named test
must exist, so a seed rule cannot lose its test silently; a rule without a test must say it is
outside Agora."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "seed-rules.md"
NAMED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def rows() -> list[tuple[str, str]]:
    """(rule, test cell) of every table row below a `| rule | code | test |` header."""
    found = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 3 and cells[0] not in ("rule", "---") and not set(cells[0]) <= {"-", "|"}:
            found.append((cells[0], cells[2]))
    return found


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def test_every_seed_rule_names_a_test_that_exists_or_says_it_is_outside_agora():
    table = rows()
    assert len(table) >= 40, "the table lost rows"
    missing = []
    for rule, cell in table:
        named = NAMED.findall(cell)
        if not named:
            assert cell == "outside Agora", f"{rule!r}: name its test as `tests/…py::test_…`, or say outside Agora"
            continue
        for path, name in named:
            file = ROOT / path
            if not file.exists() or name not in defined_tests(file):
                missing.append(f"{rule}: {path}::{name}")
    assert not missing, "tests named in docs/seed-rules.md that do not exist:\n" + "\n".join(missing)


def test_the_rules_outside_agora_are_the_seeds_two_and_formats_md_says_so():
    outside = [rule for rule, cell in rows() if cell == "outside Agora"]
    assert len(outside) == 2 and any("pipeline" in r for r in outside) and any("polish" in r for r in outside)
    formats = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert "outside Agora" in formats and "seed-rules.md" in formats
