"""The locks (requirements*.lock) against what people edit (requirements*.txt) and what installs them.

Every pin of an input is in its lock at the same version; every package of a lock is pinned with
the hashes pip checks; the locks agree with one another; nothing a locked package needs (as this
venv's installed metadata says) is missing from its lock, which pip in hash mode would refuse at
install time. No network: the lock is compiled by `make lock`, not here.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = {
    "requirements.txt": "requirements.lock",
    "requirements-dev.txt": "requirements-dev.lock",
    "requirements-local.txt": "requirements-local.lock",
}


def inputs(name: str) -> list[Requirement]:
    """The requirements a human wrote in `name`, following `-r` includes."""
    found = []
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            found += inputs(line[3:].strip())
        else:
            found.append(Requirement(line))
    return found


def locked(name: str) -> list[tuple[Requirement, list[str]]]:
    """Each requirement of the lock `name` with its hashes (a requirement and its `--hash` options
    are one logical line, continued with backslashes)."""
    text = (ROOT / name).read_text(encoding="utf-8")
    logical = re.sub(r"\\\n", " ", text)
    found = []
    for line in logical.splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        hashes = re.findall(r"--hash=(\S+)", line)
        requirement = re.sub(r"--hash=\S+", "", line).strip()
        found.append((Requirement(requirement), hashes))
    return found


def pins(name: str) -> dict[str, set[str]]:
    """Package -> the versions the lock pins (two only where a marker forks the resolution)."""
    found: dict[str, set[str]] = {}
    for requirement, _ in locked(name):
        found.setdefault(canonicalize_name(requirement.name), set()).add(_pinned(requirement))
    return found


def _pinned(requirement: Requirement) -> str:
    (specifier,) = requirement.specifier
    assert specifier.operator == "==", requirement
    return specifier.version


@pytest.mark.parametrize("lock", sorted(LOCKS.values()))
def test_every_locked_package_is_pinned_with_sha256_hashes(lock):
    entries = locked(lock)
    assert len(entries) >= 2
    for requirement, hashes in entries:
        assert _pinned(requirement), requirement
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), requirement
        assert not requirement.url and not requirement.extras, requirement  # extras are resolved into pins


@pytest.mark.parametrize(("source", "lock"), sorted(LOCKS.items()))
def test_every_input_pin_is_in_its_lock_at_the_same_version(source, lock):
    locked_pins = pins(lock)
    for requirement in inputs(source):
        name = canonicalize_name(requirement.name)
        assert name in locked_pins, f"{requirement} is in {source} but not in {lock}: run `make lock`"
        assert locked_pins[name] == {_pinned(requirement)}, (
            f"{source} pins {requirement}, {lock} has {sorted(locked_pins[name])}: run `make lock`"
        )


def test_the_lxml_html_clean_that_pip_23_2_leaves_out_is_named_and_locked():
    assert "lxml-html-clean" in {canonicalize_name(r.name) for r in inputs("requirements.txt")}
    assert "lxml-html-clean" in pins("requirements.lock")


def test_the_locks_agree_on_the_packages_they_share():
    runtime = pins("requirements.lock")
    for lock in ("requirements-dev.lock", "requirements-local.lock"):
        for name, versions in pins(lock).items():
            if name in runtime:
                assert versions == runtime[name], f"{name}: {lock} {versions}, requirements.lock {runtime[name]}"
    dev = pins("requirements-dev.lock")
    assert set(runtime) <= set(dev)  # the dev venv is the runtime's plus the tools


def needs(source: str) -> set[str]:
    """Every package that the input's requirements need on this machine, walked through the metadata
    of the installed distributions (markers and extras evaluated here). A package not installed
    here (another platform's, or the local model outside `make test`) is not walked into."""
    seen: set[str] = set()
    todo = [(r, frozenset(r.extras)) for r in inputs(source)]
    environment = default_environment()
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for line in dist.requires or []:
            dependency = Requirement(line)
            applies = dependency.marker is None or any(
                dependency.marker.evaluate({**environment, "extra": extra}) for extra in {"", *extras}
            )
            if applies:
                todo.append((dependency, frozenset(dependency.extras)))
    return {key.partition("[")[0] for key in seen}


@pytest.mark.parametrize(("source", "lock"), sorted(LOCKS.items()))
def test_a_lock_holds_everything_its_packages_need(source, lock):
    missing = needs(source) - set(pins(lock))
    assert not missing, f"{lock} lacks {sorted(missing)}, which its packages need here: run `make lock`"


def recipe(target: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)
    assert found, target
    return found.group(1)


def test_the_makefile_installs_the_locks_and_make_lock_compiles_every_input():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    # Hash mode, and no resolving: the lock is the whole tree (pip 23.2, left to resolve, reads
    # justext's `lxml[html_clean]` as a requirement of its own and takes the newest lxml on PyPI,
    # which hash mode then refuses), and `pip check` after each install says what a lock lacks.
    assert re.search(r"^PIP_LOCKED := \$\(BIN\)/pip install --no-deps --require-hashes$", makefile, re.M)
    for target, lock in (
        ("venv", "requirements.lock"),
        ("dev-venv", "requirements-dev.lock"),
        ("local-model", "requirements-local.lock"),
    ):
        steps = recipe(target)
        assert re.search(rf"\t\$\(PIP_LOCKED\)( --quiet)? -r {re.escape(lock)}\n\t\$\(BIN\)/pip check\n", steps), target
    assert makefile.count("pip install") == 1  # its definition: every install goes through it
    # The venv's own pip (3.11: 23.2) installs the locks: no unpinned upgrade of it on the way.
    assert "upgrade pip" not in makefile
    lock = recipe("lock")
    for source, target in LOCKS.items():
        assert f"{source} " in lock and f"-o {target}" in lock
    assert "uv" in pins("requirements-dev.lock")  # the tool `make lock` runs is locked too
