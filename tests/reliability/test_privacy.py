"""Accounts and privacy: a debate belongs to its owner and is private unless shared by its
unguessable read-only link. Everyone else gets a 404, over HTTP, the exports and the WebSocket
alike; the admin is staff-only; a per-user limit bounds running debates."""

from __future__ import annotations

import base64
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission
from django.test import Client, override_settings

from agora.asgi import application
from debates.models import Debate, Report, Turn

ORIGIN = (b"origin", b"http://127.0.0.1")
READ = ("/debates/{pk}/", "/debates/{pk}/report/", "/debates/{pk}/export.md", "/debates/{pk}/export.json")
CONTROL = (
    "/debates/{pk}/stop/",
    "/debates/{pk}/resume/",
    "/debates/{pk}/checkpoint/",
    "/debates/{pk}/share/",
    "/debates/{pk}/turns/{turn}/retry/",
)


def make_debate(owner, question="Alice's private question about tea?", status="failed") -> Debate:
    debate = Debate.objects.create(owner=owner, question=question, format="duel", status=status)
    Turn.objects.create(
        debate=debate, key="duel:1:a", position=1, phase="duel", speaker_slug="a", speaker_name="A",
        text="partial words", state="failed", error="no answer within 1 s",
    )  # fmt: skip
    Report.objects.create(debate=debate, verdict_markdown="# Verdict", transcript_markdown="transcript", data={})
    return debate


def client_for(user=None) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    if user is not None:
        client.force_login(user)
    return client


def urls(debate, templates):
    turn = debate.turns.first()
    return [t.format(pk=debate.pk, turn=turn.pk) for t in templates]


def read_statuses(client, debate, query="") -> dict[str, int]:
    return {url: client.get(url + query).status_code for url in urls(debate, READ)}


@pytest.fixture
def debate(db, alice):
    return make_debate(alice)


# -- HTTP: owner, other user, anonymous, staff -------------------------------------------------------


def with_view_all(user):
    user.user_permissions.add(Permission.objects.get(codename="view_all_debates"))
    return type(user).objects.get(pk=user.pk)


def test_owner_and_holders_of_view_all_can_read_everything(debate, alice, staff, superuser):
    for user in (alice, with_view_all(staff), superuser):
        assert set(read_statuses(client_for(user), debate).values()) == {200}, user


def test_other_user_and_anonymous_get_404_everywhere(debate, bob, no_runs):
    for client in (client_for(bob), client_for()):
        assert set(read_statuses(client, debate).values()) == {404}
        for url in urls(debate, CONTROL):
            assert client.post(url, {"shared": "1", "addition": "x"}).status_code == 404, url
    debate.refresh_from_db()
    assert not debate.shared and debate.status == "failed" and debate.checkpoint_reply is None
    assert no_runs == [], "nothing was resumed or retried"
    # The 404 for a private debate is the 404 for a debate that does not exist.
    missing = client_for(bob).get("/debates/999999/")
    private = client_for(bob).get(f"/debates/{debate.pk}/")
    assert missing.status_code == private.status_code == 404


def test_anonymous_must_log_in_to_start_a_debate(db):
    response = Client().get("/debates/new/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/debates/new/"
    response = Client().post("/debates/new/", {"topic": "Why?", "format": "duel"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not Debate.objects.exists()


def test_admin_is_staff_only(db, alice, staff):
    for client in (client_for(), client_for(alice)):
        response = client.get("/admin/")
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), response
        assert client.get("/admin/debates/debate/").status_code == 302
    assert client_for(staff).get("/admin/").status_code == 200


def test_home_lists_only_the_users_own_debates(db, alice, bob, staff):
    make_debate(alice, "Alice asks about tea?")
    make_debate(bob, "Bob asks about coffee?")
    make_debate(None, "Someone at the terminal asks about water?")
    pages = {
        "alice": client_for(alice).get("/").content.decode(),
        "bob": client_for(bob).get("/").content.decode(),
        "anonymous": client_for().get("/").content.decode(),
        "staff": client_for(staff).get("/").content.decode(),
    }
    assert "Alice asks about tea?" in pages["alice"] and "Bob asks about coffee?" not in pages["alice"]
    assert "Bob asks about coffee?" in pages["bob"] and "Alice asks about tea?" not in pages["bob"]
    assert "Alice asks" not in pages["anonymous"] and "Bob asks" not in pages["anonymous"]
    # A terminal debate has no owner: only holders of view_all_debates see it.
    assert all("Someone at the terminal asks about water?" not in page for page in pages.values())
    operator = client_for(with_view_all(staff)).get("/").content.decode()
    assert all(q in operator for q in ("Alice asks about tea?", "Bob asks", "Someone at the terminal"))


# -- sharing --------------------------------------------------------------------------------------------


def test_share_link_is_read_only_and_revocable(debate, alice, bob, no_runs):
    owner = client_for(alice)
    assert owner.post(f"/debates/{debate.pk}/share/", {"shared": "1"}).status_code == 302
    debate.refresh_from_db()
    assert debate.shared
    assert f"?share={debate.share_token}" in owner.get(f"/debates/{debate.pk}/").content.decode()

    # A wrong token, or none, still reveals nothing.
    stranger = client_for(bob)
    assert set(read_statuses(stranger, debate, "?share=" + "x" * 32).values()) == {404}
    assert set(read_statuses(stranger, debate).values()) == {404}

    # The right token opens every read-only view ...
    viewer = client_for(bob)
    assert set(read_statuses(viewer, debate, f"?share={debate.share_token}").values()) == {200}
    page = viewer.get(f"/debates/{debate.pk}/?share={debate.share_token}").content.decode()
    assert "data-readonly" in page and f'action="/debates/{debate.pk}/share/"' not in page
    # ... and the session remembers it, so export links work without the token ...
    assert set(read_statuses(viewer, debate).values()) == {200}
    # ... but never the controls.
    for url in urls(debate, CONTROL):
        query = f"?share={debate.share_token}"
        assert viewer.post(url + query, {"shared": "0", "addition": "x"}).status_code == 404, url
    debate.refresh_from_db()
    assert debate.shared and debate.status == "failed" and no_runs == []

    # Unsharing revokes the link and the grant the viewer's session holds.
    assert owner.post(f"/debates/{debate.pk}/share/", {"shared": "0"}).status_code == 302
    assert set(read_statuses(viewer, debate).values()) == {404}
    assert set(read_statuses(client_for(bob), debate, f"?share={debate.share_token}").values()) == {404}
    # Sharing again makes a new link; the old one stays dead.
    token = debate.share_token
    owner.post(f"/debates/{debate.pk}/share/", {"shared": "1"})
    debate.refresh_from_db()
    assert debate.share_token != token
    assert set(read_statuses(client_for(bob), debate, f"?share={token}").values()) == {404}


def test_share_tokens_are_unguessable(db, alice):
    tokens = [make_debate(alice, f"Question {i}?").share_token for i in range(20)]
    assert len(set(tokens)) == len(tokens)
    for token in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{32,}", token), token
        assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) >= 24, "at least 24 random bytes"


# -- the per-user running limit ------------------------------------------------------------------------


@override_settings(AGORA_MAX_RUNNING_PER_USER=1)
def test_running_limit_refuses_a_new_debate_with_a_clear_message(libraries, alice, bob, no_runs):
    make_debate(alice, "Already running?", status="running")
    before = Debate.objects.count()
    form = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}
    response = client_for(alice).post("/debates/new/", form)
    assert response.status_code == 200
    errors = response.context["form"].non_field_errors()
    message = "You already have 1 debate running (the limit is 1). Stop it or wait for it to finish."
    assert list(errors) == [message]
    assert message in response.content.decode()
    assert Debate.objects.count() == before and no_runs == []

    # Bob's debates are his own count.
    response = client_for(bob).post("/debates/new/", form)
    assert response.status_code == 302
    created = Debate.objects.get(owner=bob)
    assert response["Location"] == f"/debates/{created.pk}/" and no_runs == [created.pk]


@override_settings(AGORA_MAX_RUNNING_PER_USER=1)
def test_running_limit_also_holds_for_resume(db, alice, no_runs):
    make_debate(alice, "Already running?", status="running")
    failed = make_debate(alice, "Failed earlier?", status="failed")
    owner = client_for(alice)
    response = owner.post(f"/debates/{failed.pk}/resume/", follow=True)
    assert "You already have 1 debate running" in response.content.decode()
    failed.refresh_from_db()
    assert failed.status == "failed" and no_runs == []


# -- the WebSocket: same rules, through AllowedHostsOriginValidator and the deferred auth stack ------


async def _ws(path: str, user=None, origin=ORIGIN) -> tuple[bool, int | None]:
    """(let in, the close code): let in when its first message is the debate; refused when the
    handshake fails (a bad origin) or the socket is closed before anything was sent."""
    headers = [origin] if origin else []
    if user is not None:
        client = Client()
        await sync_to_async(client.force_login)(user)
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect(timeout=5)
    if connected:
        first = await communicator.receive_output(timeout=5)
        if first["type"] == "websocket.close":
            connected, code = False, first.get("code")
        else:
            assert 'id="transcript"' in first["text"], first  # the catch-up
    await communicator.disconnect()
    return connected, code


@pytest.mark.django_db(transaction=True)
async def test_websocket_follows_the_same_rules(alice, bob, staff):
    debate = await sync_to_async(make_debate)(alice)
    path = f"/ws/debates/{debate.pk}/"
    assert await _ws(path, alice) == (True, None)
    assert await _ws(path, staff) == (False, 4404), "staff alone sees nothing that is not theirs"
    assert await _ws(path, await sync_to_async(with_view_all)(staff)) == (True, None)
    assert await _ws(path, bob) == (False, 4404)
    assert await _ws(path) == (False, 4404)
    assert await _ws(f"{path}?share={debate.share_token}", bob) == (False, 4404), "not shared yet"

    await sync_to_async(Debate.objects.filter(pk=debate.pk).update)(shared=True)
    assert await _ws(f"{path}?share={debate.share_token}", bob) == (True, None)
    assert await _ws(f"{path}?share={debate.share_token}") == (True, None)
    assert await _ws(f"{path}?share=wrong-token", bob) == (False, 4404)

    await sync_to_async(Debate.objects.filter(pk=debate.pk).update)(shared=False)
    assert await _ws(f"{path}?share={debate.share_token}", bob) == (False, 4404)


@pytest.mark.django_db(transaction=True)
async def test_websocket_grant_from_the_share_link_lives_in_the_session(alice, bob):
    """The live page's WebSocket URL carries no token: opening the share link must be enough."""
    debate = await sync_to_async(make_debate)(alice)
    await sync_to_async(Debate.objects.filter(pk=debate.pk).update)(shared=True)
    viewer = Client()
    await sync_to_async(viewer.force_login)(bob)
    response = await sync_to_async(viewer.get)(f"/debates/{debate.pk}/?share={debate.share_token}")
    assert response.status_code == 200
    cookie = (b"cookie", f"sessionid={viewer.cookies['sessionid'].value}".encode())
    communicator = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/", headers=[ORIGIN, cookie])
    connected, _ = await communicator.connect(timeout=5)
    assert connected
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_websocket_needs_an_allowed_origin(alice):
    debate = await sync_to_async(make_debate)(alice)
    path = f"/ws/debates/{debate.pk}/"
    assert (await _ws(path, alice, origin=None))[0] is False
    assert (await _ws(path, alice, origin=(b"origin", b"http://evil.example")))[0] is False
    assert (await _ws(path, alice, origin=(b"origin", b"http://localhost:8000")))[0] is True
