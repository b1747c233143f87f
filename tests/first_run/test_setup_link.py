"""The first account without a terminal detour: `manage.py setup_link` (run by `make run`) prints a
one-time link while no account exists; it creates the owner, signs them in and is spent."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from testkit.servers import ROOT, AgoraServer

LINK = re.compile(r"(https?://\S+/setup/[\w-]+/)")


def setup_link(base="http://testserver") -> str:
    out = StringIO()
    call_command("setup_link", base=base, stdout=out)
    found = LINK.search(out.getvalue())
    return found.group(1).removeprefix(base) if found else out.getvalue()


@pytest.mark.django_db
def test_the_link_creates_the_owner_signs_them_in_and_is_spent():
    path = setup_link()
    assert path.startswith("/setup/"), path
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    assert "Create the first account" in client.get(path).content.decode()
    response = client.post(
        path, {"username": "owner", "password1": "a-long-pass-7731", "password2": "a-long-pass-7731"}
    )
    assert response.status_code == 302 and response["Location"] == "/debates/new/"
    owner = get_user_model().objects.get()
    assert owner.username == "owner" and owner.is_staff and owner.is_superuser
    assert client.get("/debates/new/").status_code == 200, "signed in"
    # Spent: the same link, a fresh visitor, and the command itself now say so.
    assert Client().get(path).status_code == 404
    assert "Accounts exist" in setup_link()


@pytest.mark.django_db
def test_only_the_latest_link_works_and_a_guess_reveals_nothing():
    first, second = setup_link(), setup_link()
    assert first != second
    assert Client().get(first).status_code == 404, "a new link replaces the old one"
    assert Client().get("/setup/" + "x" * 43 + "/").status_code == 404
    assert Client().get(second).status_code == 200


@pytest.mark.django_db
def test_a_weak_password_is_refused_beside_its_field():
    path = setup_link()
    response = Client(HTTP_ACCEPT_LANGUAGE="en").post(
        path, {"username": "owner", "password1": "123", "password2": "123"}
    )
    assert response.status_code == 200 and not get_user_model().objects.exists()
    assert "password2" in response.context["form"].errors


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
        link = LINK.search(printed).group(1)
        page = await chromium.page(locale="en-US")
        await page.goto(server.url + "/accounts/login/")
        assert "setup link" in await page.inner_text("main")
        await page.goto(link)
        await page.fill("#id_username", "owner")
        await page.fill("#id_password1", "a-long-pass-7731")
        await page.fill("#id_password2", "a-long-pass-7731")
        await page.click("button[type=submit].button")
        await page.wait_for_url(f"{server.url}/debates/new/")
        assert await page.locator("#id_topic").count() == 1
        assert "owner" in await page.inner_text("header")
    finally:
        server.stop()
