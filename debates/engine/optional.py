"""The heavy packages only one part of Agora uses, imported where that part runs.

Django's setup (and so every page) imports none of them. A server without one of them, or with one
that cannot be imported (pip 23.2 leaves out the `lxml_html_clean` that lxml 6's `html-clean` extra
names, and trafilatura's import then fails), loses only the part that needs it, and that part says
which package is missing and how to install it: research reads search snippets instead of pages,
an upload of that kind is refused, the money of a model is unknown. `agora.checks` names the
missing ones at start-up.

Plain Python, no Django: the search package, the document reader (in its child process) and the
price lookup use it.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

# What installs every package at the versions tested together (docs/installing.md).
INSTALL = "pip install --no-deps --require-hashes -r requirements.lock"


@dataclass(frozen=True)
class Optional:
    module: str  # the name imported
    package: str  # the name pip installs
    without: str  # what goes without it


PACKAGES = {
    spec.module: spec
    for spec in (
        Optional("trafilatura", "trafilatura", "research reads no web page, only search results' snippets"),
        # trafilatura imports lxml.html.clean, which lxml 6 moved into this package.
        Optional("lxml_html_clean", "lxml_html_clean", "trafilatura fails to import: research reads no web page"),
        Optional("pypdf", "pypdf", "uploaded PDF documents are not read"),
        Optional("docx", "python-docx", "uploaded Word (.docx) documents are not read"),
        Optional("genai_prices", "genai-prices", "the prices of known models are unknown"),
    )
}


class MissingPackage(ImportError):
    """An optional package that is not installed or does not import; `str()` says what goes without
    it and how to install it."""

    def __init__(self, module: str, error: ImportError | None = None) -> None:
        self.optional = PACKAGES[module]
        self.reason = " ".join(str(error).split()) if error is not None else f"No module named {module!r}"
        absent = error is None or (isinstance(error, ModuleNotFoundError) and error.name == module)
        state = "is not installed here" if absent else "does not import here"  # a dependency of its is missing
        super().__init__(
            f"the Python package {self.optional.package} {state} ({self.reason}), so {self.optional.without}. "
            f"Install it with: {INSTALL}",
            name=module,
        )

    @property
    def package(self) -> str:
        return self.optional.package


def load(module: str) -> ModuleType:
    """`import module`, or MissingPackage naming the package and the install command. An ImportError
    raised inside the package (one of its own dependencies missing) counts as missing too."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingPackage(module, error) from error


def missing() -> list[Optional]:
    """The optional packages that are not installed, found without importing any of them."""
    found = []
    for spec in PACKAGES.values():
        try:
            absent = importlib.util.find_spec(spec.module) is None
        except (ImportError, ValueError):  # a parent package missing, or a None in sys.modules
            absent = True
        if absent:
            found.append(spec)
    return found
