"""The first account without a terminal detour: `manage.py setup_link` (run by `make run`) prints a
one-time link while no account exists; it creates the owner, signs them in and is spent. Its code
travels after `#`, so no access log holds it, and of simultaneous uses exactly one succeeds."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from agora.models import SetupToken
from testkit.http import Browser
from testkit.servers import ROOT, AgoraServer, postgres_database

LINK = re.compile(r"(https?://\S+/setup/#([\w-]+))")
PASSWORD = "a-long-pass-7731"


def setup_link(base="http://testserver") -> str:
    """The printed link without `base`, or what the command said instead."""
    out = StringIO()
    call_command("setup_link", base=base, stdout=out)
    found = LINK.search(out.getvalue())
    return found.group(1).removeprefix(base) if found else out.getvalue()


def code_of(link: str) -> str:
    return link.partition("#")[2]


def owner_fields(code: str, username: str = "owner") -> dict:
    return {"code": code, "username": username, "password1": PASSWORD, "password2": PASSWORD}


@pytest.mark.django_db
def test_the_link_creates_the_owner_signs_them_in_and_is_spent():
    link = setup_link()
    assert link.startswith("/setup/#"), link
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    page = client.get("/setup/").content.decode()  # what a browser requests: the fragment stays home
    assert "Create the first account" in page and 'name="code"' in page and "data-setup" in page
    response = client.post("/setup/", owner_fields(code_of(link)))
    assert response.status_code == 302 and response["Location"] == "/debates/new/"
    owner = get_user_model().objects.get()
    assert owner.username == "owner" and owner.is_staff and owner.is_superuser
    assert client.get("/debates/new/").status_code == 200, "signed in"
    # Spent: the same code, a fresh visitor, and the command itself now say so.
    assert Client().post("/setup/", owner_fields(code_of(link), "second")).status_code == 404
    assert Client().get("/setup/").status_code == 404
    assert get_user_model().objects.count() == 1
    assert "Accounts exist" in setup_link()


@pytest.mark.django_db
def test_only_the_latest_link_works_and_a_guess_reveals_nothing():
    first, second = code_of(setup_link()), code_of(setup_link())
    assert first != second
    for stale in (first, "x" * 43):  # a new link replaces the old one; a guess is just wrong
        response = Client(HTTP_ACCEPT_LANGUAGE="en").post("/setup/", owner_fields(stale))
        assert response.status_code == 200 and "code" in response.context["form"].errors
        assert "This setup code is not valid (any more)." in response.content.decode()
        assert not get_user_model().objects.exists()
    assert "code" in Client().post("/setup/", owner_fields("")).context["form"].errors
    assert Client().post("/setup/", owner_fields(second)).status_code == 302


@pytest.mark.django_db
def test_a_link_with_the_code_in_its_path_is_refused_and_spent():
    """As links were printed before: that request line is in an access log, so the code is spent."""
    code = code_of(setup_link())
    assert Client().get(f"/setup/{code}/").status_code == 404
    assert not SetupToken.objects.exists()
    assert Client().post("/setup/", owner_fields(code)).status_code == 200
    assert not get_user_model().objects.exists()


@pytest.mark.django_db
def test_a_weak_password_is_refused_beside_its_field():
    code = code_of(setup_link())
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post(
        "/setup/", {"code": code, "username": "owner", "password1": "123", "password2": "123"}
    )
    assert response.status_code == 200 and not get_user_model().objects.exists()
    assert "password2" in response.context["form"].errors
    assert Client().post("/setup/", owner_fields(code)).status_code == 302, "a refused form spends nothing"


@pytest.mark.django_db
def test_the_login_page_says_what_to_do_when_no_account_exists(alice):
    get_user_model().objects.all().delete()
    page = Client(HTTP_ACCEPT_LANGUAGE="en").get("/accounts/login/").content.decode()
    assert "There is no account yet" in page and "manage.py setup_link" in page
    get_user_model().objects.create_user("alice", password="pw-alice-123")
    assert "There is no account yet" not in Client().get("/accounts/login/").content.decode()


@pytest.mark.browser
async def test_the_printed_link_leads_to_a_signed_in_start_form_in_chromium(tmp_path, template_db, fake_llm, chromium):
    db = tmp_path / "fresh.sqlite3"
    shutil.copy(template_db, db)
    env_db = f"sqlite:///{db}"
    manage = [sys.executable, "manage.py"]
    wipe = "from django.contrib.auth.models import User; User.objects.all().delete()"
    subprocess.run([*manage, "shell", "-c", wipe], cwd=ROOT, env={"DATABASE_URL": env_db, "PATH": ""}, check=True)
    server = AgoraServer(tmp_path, fake_llm.base_url, database_url=env_db).start()
    try:
        printed = subprocess.run(
            [*manage, "setup_link", "--base", server.url], cwd=ROOT, env=server.env, capture_output=True, text=True
        ).stdout
        link, code = LINK.search(printed).groups()
        page = await chromium.page(locale="en-US")
        await page.goto(server.url + "/accounts/login/")
        assert "setup link" in await page.inner_text("main")
        await page.goto(link)
        assert await page.input_value("#id_code") == code  # copied from the fragment by the page
        assert page.url == f"{server.url}/setup/", "and taken off the address bar"
        await page.fill("#id_username", "owner")
        await page.fill("#id_password1", "a-long-pass-7731")
        await page.fill("#id_password2", "a-long-pass-7731")
        await page.click("button[type=submit].button")
        await page.wait_for_url(f"{server.url}/debates/new/")
        assert await page.locator("#id_topic").count() == 1
        assert "owner" in await page.inner_text("header")
    finally:
        server.stop()
    assert '"POST /setup/" 302' in server.log() and code not in server.log()


# -- simultaneous uses, and the access log -------------------------------------------------------

RACE = """
import json, threading
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment
from agora.models import SetupToken

setup_test_environment()
User.objects.all().delete()
code = SetupToken.issue()
ready = threading.Barrier(USES)
codes = []

def use(n):
    client = Client()
    ready.wait()
    fields = {"code": code, "username": f"owner{n}", "password1": "a-long-pass-7731", "password2": "a-long-pass-7731"}
    codes.append(client.post("/setup/", fields).status_code)
    connection.close()

threads = [threading.Thread(target=use, args=(n,)) for n in range(USES)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps({"codes": sorted(codes), "superusers": User.objects.filter(is_superuser=True).count()}))
"""


def race(database_url: str, uses: int = 4) -> dict:
    """`uses` threads, each with its own database connection, post the same code at once (the
    real password hasher keeps each one inside its transaction for a while)."""
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "1"}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", RACE.replace("USES", str(uses))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_simultaneous_uses_of_one_link_make_one_owner_on_sqlite(tmp_path, template_db):
    db = tmp_path / "race.sqlite3"
    shutil.copy(template_db, db)
    for _trial in range(2):
        assert race(f"sqlite:///{db}") == {"codes": [302, 404, 404, 404], "superusers": 1}


@pytest.mark.slow
def test_simultaneous_uses_of_one_link_make_one_owner_on_postgresql():
    admin, name, url = postgres_database("agora_setup_race")
    try:
        migrated = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        for _trial in range(3):  # before the claim: four superusers, five trials of five
            assert race(url) == {"codes": [302, 404, 404, 404], "superusers": 1}
    finally:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()


def test_the_code_never_reaches_daphnes_access_log(tmp_path, template_db, fake_llm):
    """A real daphne, as the Procfile runs it (its access log on stdout): the link is opened as a
    browser opens it (the part after # is never sent) and the form posts the code."""
    db = tmp_path / "fresh.sqlite3"
    shutil.copy(template_db, db)
    env_db = f"sqlite:///{db}"
    wipe = "from django.contrib.auth.models import User; User.objects.all().delete()"
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", wipe],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": env_db},
        check=True,
    )
    server = AgoraServer(tmp_path, fake_llm.base_url, database_url=env_db, DEBUG="0", ALLOWED_HOSTS="127.0.0.1").start()
    try:
        printed = subprocess.run(
            [sys.executable, "manage.py", "setup_link", "--base", server.url],
            cwd=ROOT,
            env=server.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        link, code = LINK.search(printed).groups()
        assert code in printed and len(code) >= 40
        browser = Browser(server.url)
        page, _hash, _code = link.removeprefix(server.url).partition("#")
        status, final, _body = browser.post(
            page, {"code": code, "username": "owner", "password1": PASSWORD, "password2": PASSWORD}, follow=False
        )
        assert status == 302 and final == "/debates/new/"
    finally:
        server.stop()
    log = server.log_path.read_text(errors="replace")
    assert '"GET /setup/" 200' in log and '"POST /setup/" 302' in log, log[-2000:]  # the access log is on
    assert code not in log


@pytest.mark.django_db
def test_every_way_to_a_new_link_names_the_command_as_the_readme_does(alice):
    """The README says `.venv/bin/python manage.py setup_link` (a fresh clone has no activated
    virtualenv, so a bare `python` lacks Django): the terminal box, the setup page's refusal and the
    login page say the same."""
    command = ".venv/bin/python manage.py setup_link"
    assert command in (ROOT / "README.md").read_text()
    get_user_model().objects.all().delete()
    out = StringIO()
    call_command("setup_link", stdout=out)
    box = out.getvalue()
    assert command in box and not re.search(r"(?<![/\w])python manage\.py", box), box
    refusal = Client(HTTP_ACCEPT_LANGUAGE="en").post("/setup/", owner_fields("x" * 43)).content.decode()
    assert command in refusal
    assert command in Client(HTTP_ACCEPT_LANGUAGE="en").get("/accounts/login/").content.decode()
