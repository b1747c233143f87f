"""Without its heavy optional packages (trafilatura, pypdf, python-docx, genai-prices) Agora still
sets up and serves every page; only the part that needs a missing one fails, naming the package and
the install command.

Each case runs in a fresh interpreter (so nothing is in `sys.modules` yet) whose `sitecustomize`
makes those modules unimportable, as on a server where they were never installed; the document
reader's own child process inherits it through PYTHONPATH. The second case is the one a user met:
pip 23.2 leaves out `lxml_html_clean`, and trafilatura's import fails inside lxml.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from debates.engine.optional import INSTALL
from testkit.documents import make_docx, make_pdf
from testkit.fake_search import FakeSearchServer

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = """
import importlib.abc
import sys

BLOCKED = {blocked!r}


class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
"""

# Runs under the blocker; prints what it saw as one JSON object on its last line.
DRIVER = r"""
import asyncio, json, logging, os, sys

import django

os.environ["DJANGO_SETTINGS_MODULE"] = "agora.settings"
django.setup()

from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import get_resolver

seen = {"heavy_at_setup": sorted(m for m in ("trafilatura", "pypdf", "docx", "genai_prices") if m in sys.modules)}
get_resolver().url_patterns  # every view module
seen["heavy_after_urls"] = sorted(m for m in ("trafilatura", "pypdf", "docx", "genai_prices") if m in sys.modules)

anonymous = Client(HTTP_HOST="127.0.0.1")
seen["pages"] = {path: anonymous.get(path).status_code for path in ("/", "/accounts/login/", "/api/v1/docs")}
person = Client(HTTP_HOST="127.0.0.1")
person.force_login(User.objects.create_user("reader", password="pw-for-reader-1"))
seen["pages"]["/ (signed in)"] = person.get("/").status_code

from debates.search.errors import FetchFailed
from debates.search.fetch import PageFetcher

async def fetch(url):
    try:
        page = await PageFetcher(["127.0.0.0/8"]).fetch(url)
        return {"text": page.text[:40]}
    except FetchFailed as error:
        return {"error": str(error)}

seen["html_page"] = asyncio.run(fetch(sys.argv[1]))
seen["text_page"] = asyncio.run(fetch(sys.argv[2]))

from debates import documents

def upload(name, path):
    with open(path, "rb") as file:
        data = file.read()
    try:
        return {"sections": len(documents.extract_isolated(name, data).sections)}
    except documents.DocumentError as error:
        return {"error": str(error), "msgid": error.text.msgid}

seen["pdf"] = upload("report.pdf", sys.argv[3])
seen["docx"] = upload("notes.docx", sys.argv[4])
seen["txt"] = upload("notes.txt", sys.argv[5])

from debates import prices

records = []
handler = logging.Handler()
handler.emit = records.append
logging.getLogger("debates.prices").addHandler(handler)
seen["price"] = prices.from_table("gpt-4o-mini")
prices.from_table("gpt-4o")
seen["price_log"] = [record.getMessage() for record in records]

from io import StringIO
out = StringIO()
call_command("check", stdout=out, stderr=out)
seen["check"] = out.getvalue()
print(json.dumps(seen, default=str))
"""


@pytest.fixture(scope="module")
def pages():
    with FakeSearchServer(host="127.0.0.1") as fake:
        fake.add_page("trees", "How street trees cool a city", "Shade from street trees lowers pavement heat.")
        yield fake


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """A migrated SQLite database, made once with every package present; each case copies it."""
    path = tmp_path_factory.mktemp("optional-db") / "db.sqlite3"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{path}"},
        check=True,
        capture_output=True,
        timeout=120,
    )
    return path


def run_without(blocked: set[str], tmp_path: Path, migrated: Path, pages: FakeSearchServer) -> dict:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)), encoding="utf-8")
    database = tmp_path / "db.sqlite3"
    shutil.copy(migrated, database)
    files = {"pdf": make_pdf(["Page one says trees cool streets."]), "docx": make_docx(["Trees cool streets."])}
    files["txt"] = b"Trees cool streets.\n"
    for kind, data in files.items():
        (tmp_path / f"upload.{kind}").write_bytes(data)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "DATABASE_URL": f"sqlite:///{database}",
        "LOG_FORMAT": "",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DRIVER,
            pages.page_url("trees"),
            pages.url("/text"),
            *(str(tmp_path / f"upload.{kind}") for kind in ("pdf", "docx", "txt")),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_the_heavy_packages_every_page_works_and_each_part_names_what_to_install(tmp_path, migrated, pages):
    seen = run_without({"trafilatura", "pypdf", "docx", "genai_prices"}, tmp_path, migrated, pages)

    assert seen["heavy_at_setup"] == [] and seen["heavy_after_urls"] == []
    assert seen["pages"] == {"/": 200, "/accounts/login/": 200, "/api/v1/docs": 200, "/ (signed in)": 200}

    # Research: an HTML page is not read, and the reason names the package and the command; a
    # plain-text page needs no trafilatura and still is.
    error = seen["html_page"]["error"]
    assert "trafilatura" in error and INSTALL in error and "/pages/trees was not read" in error
    assert "text" in seen["text_page"]

    # Uploads: the child process that reads them lacks the parser too, and says which.
    assert "report.pdf" in seen["pdf"]["error"] and "pypdf" in seen["pdf"]["error"]
    assert INSTALL in seen["pdf"]["error"]
    assert "notes.docx" in seen["docx"]["error"] and "python-docx" in seen["docx"]["error"]
    assert seen["pdf"]["msgid"] == seen["docx"]["msgid"]  # one translated sentence
    assert seen["txt"] == {"sections": 1}

    # Prices: unknown, said once in the log with the package and the command.
    assert seen["price"] is None
    assert len(seen["price_log"]) == 1
    assert "genai-prices" in seen["price_log"][0] and INSTALL in seen["price_log"][0]

    # And at start-up: `manage.py check` names each missing package.
    for package in ("trafilatura", "pypdf", "python-docx", "genai-prices"):
        assert f"The Python package {package} is not installed" in seen["check"]
    assert "agora.W005" in seen["check"]


def test_pip_23_2_without_lxml_html_clean_loses_only_page_reading(tmp_path, migrated, pages):
    """lxml 6 without lxml_html_clean: `import trafilatura` fails inside lxml ("lxml.html.clean
    module is now a separate project"), which used to stop Django's setup."""
    seen = run_without({"lxml_html_clean"}, tmp_path, migrated, pages)

    assert seen["pages"] == {"/": 200, "/accounts/login/": 200, "/api/v1/docs": 200, "/ (signed in)": 200}
    error = seen["html_page"]["error"]
    assert "trafilatura" in error and "lxml_html_clean" in error and INSTALL in error
    assert seen["pdf"] == {"sections": 1} and seen["docx"] == {"sections": 1}
    assert seen["price"] is not None
    assert "The Python package lxml_html_clean is not installed" in seen["check"]
    assert "trafilatura is not installed" not in seen["check"]


def test_with_everything_installed_the_check_is_quiet():
    from agora.checks import optional_packages

    assert optional_packages(None) == []
