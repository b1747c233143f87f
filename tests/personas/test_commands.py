"""manage.py import_library / export_library / load_libraries."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from personas.manifest.io import bundled_manifest_paths, export_library, normalize_manifest
from personas.manifest.text import dump_manifest
from personas.models import Library

from .conftest import db_counts, db_snapshot, sample_manifest

pytestmark = pytest.mark.django_db
BUNDLED = bundled_manifest_paths()
needs_bundled = pytest.mark.skipif(not BUNDLED, reason="personas/libraries/ has no *.json manifests yet")


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else dump_manifest(data), encoding="utf-8")
    return path


# --- import_library ----------------------------------------------------------------------------


def test_import_library_imports_and_summarises(tmp_path):
    out, _ = run("import_library", str(write(tmp_path, "lib.json", sample_manifest())))
    assert 'library "test-duel" created: personas 3 new' in out
    assert Library.objects.get(slug="test-duel").personas.count() == 3


def test_import_library_refuses_a_bad_manifest_and_changes_nothing(tmp_path, imported):
    bad = sample_manifest()
    bad["library"]["name"] = "Renamed"
    bad["personas"][0]["cross_critique"][0]["target"] = "ghost"
    bad["personas"][1]["expression_style"] = "辩题：要不要出家"
    before = db_snapshot()
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_library", str(write(tmp_path, "bad.json", bad)), stderr=err)
    assert caught.value.returncode == 1
    assert "nothing was changed" in str(caught.value)
    lines = err.getvalue().splitlines()
    assert 'personas[0].cross_critique[0].target: unknown persona "ghost"' in lines
    assert any(
        line.startswith('personas[1].expression_style: Reads like a debate question ("辩题：")') for line in lines
    )
    assert db_snapshot() == before


def test_import_library_no_replace(tmp_path, imported):
    with pytest.raises(CommandError):
        run("import_library", "--no-replace", str(write(tmp_path, "lib.json", sample_manifest())))


def test_import_library_missing_file():
    with pytest.raises(CommandError, match="cannot read"):
        run("import_library", "/nonexistent/lib.json")


def test_import_library_exit_status_from_the_shell(tmp_path):
    """A real process: a refused manifest exits non-zero with the path on stderr."""
    bad = write(tmp_path, "bad.json", '{"agora_manifest": 1,\n "library": }')
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'scratch.sqlite3'}"}
    proc = subprocess.run(
        [sys.executable, "manage.py", "import_library", str(bad)],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "$: malformed JSON at line 2 column 13" in proc.stderr


# --- export_library ----------------------------------------------------------------------------


def test_export_library_to_stdout_and_file(tmp_path, imported):
    expected = dump_manifest(export_library(imported))
    out, _ = run("export_library", "test-duel")
    assert out == expected
    target = tmp_path / "out.json"
    run("export_library", "test-duel", "-o", str(target))
    assert target.read_text(encoding="utf-8") == expected


def test_export_then_import_round_trips(tmp_path, imported):
    out, _ = run("export_library", "test-duel")
    Library.objects.filter(slug="test-duel").delete()
    run("import_library", str(write(tmp_path, "again.json", out)))
    # Identical but for where the personas came from: an import is recorded external-import.
    imported = out.replace('"source": "bundled"', '"source": "external-import"')
    assert imported != out and run("export_library", "test-duel")[0] == imported


def test_export_library_unknown_slug(imported):
    with pytest.raises(CommandError, match='no library "nope"'):
        run("export_library", "nope")


# --- load_libraries ----------------------------------------------------------------------------


def test_load_libraries_resolves_references_across_files_and_is_idempotent(tmp_path):
    first, second = sample_manifest("aaa", prefix="a"), sample_manifest("zzz", prefix="z")
    # a-… sorts first but critiques a persona that only zzz.json brings.
    first["personas"][0]["cross_critique"].append({"target": "z-beta", "point": "p", "citation": "c"})
    write(tmp_path, "aaa.json", first)
    write(tmp_path, "zzz.json", second)
    out, _ = run("load_libraries", "--dir", str(tmp_path))
    assert 'aaa.json: library "aaa" created' in out and "loaded 2 libraries" in out
    counts = db_counts()
    out, _ = run("load_libraries", "--dir", str(tmp_path))
    assert 'aaa.json: library "aaa" updated' in out
    assert db_counts() == counts


def test_load_libraries_refuses_all_files_if_one_is_bad(tmp_path, imported):
    write(tmp_path, "aaa.json", sample_manifest("aaa", prefix="a"))
    write(tmp_path, "bbb.json", "{oops")
    before = db_snapshot()
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("load_libraries", "--dir", str(tmp_path), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().startswith("bbb.json: $: malformed JSON at line 1 column 2")
    assert db_snapshot() == before


def test_load_libraries_with_no_files(tmp_path):
    out, _ = run("load_libraries", "--dir", str(tmp_path))
    assert "nothing to load" in out


@needs_bundled
def test_bundled_libraries_load_twice_without_duplicates():
    run("load_libraries")
    counts = db_counts()
    assert counts["personas.Library"] == len(BUNDLED)
    run("load_libraries")
    assert db_counts() == counts


@needs_bundled
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_bundled_library_file_round_trips_exactly(path):
    """Each bundled file is already in canonical form: loading and exporting gives the same bytes."""
    run("load_libraries")
    data = json.loads(path.read_text(encoding="utf-8"))
    library = Library.objects.get(slug=data["library"]["slug"])
    assert export_library(library) == normalize_manifest(data)
    assert dump_manifest(export_library(library)) == path.read_text(encoding="utf-8")
