"""API tokens in the admin (hardening round two, finding 7): staff holding the token permissions
make tokens for themselves only, and a token's user and revocation never change after it is made."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from debates.api import tokens
from debates.models import ApiToken, Debate
from tests.security.conftest import english_client

pytestmark = pytest.mark.django_db

ADD = "/admin/debates/apitoken/add/"


@pytest.fixture
def token_staff(staff):
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_apitoken", "change_apitoken", "view_apitoken"])
    )
    return type(staff).objects.get(pk=staff.pk)


def test_staff_make_tokens_only_for_themselves(token_staff, superuser):
    Debate.objects.create(owner=superuser, question="The superuser's own question?", format="duel")
    admin = english_client(token_staff)
    assert 'name="user"' not in admin.get(ADD).content.decode(), "no choice of user for staff"
    response = admin.post(ADD, {"user": superuser.pk, "name": "borrowed"})
    assert response.status_code == 302, response.content.decode()[:2000]
    row = ApiToken.objects.get(name="borrowed")
    assert row.user == token_staff, "the token is the staff member's own, whatever the post said"
    # What the new token opens: the staff member's debates, not the superuser's.
    shown = [m.message for m in response.wsgi_request._messages._queued_messages]
    token = next(m.split(": ")[-1] for m in shown if tokens.SCHEME in m)
    listing = english_client().get("/api/v1/debates", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert listing["count"] == 0


def test_a_superuser_may_make_a_token_for_someone(superuser, alice):
    response = english_client(superuser).post(ADD, {"user": alice.pk, "name": "for alice"})
    assert response.status_code == 302
    assert ApiToken.objects.get(name="for alice").user == alice


@pytest.mark.parametrize("who", ["token_staff", "superuser"])
def test_user_and_revocation_never_change_after_creation(who, request, alice):
    editor = request.getfixturevalue(who)
    row, _token = tokens.issue(editor, "mine")
    change = f"/admin/debates/apitoken/{row.pk}/change/"
    admin = english_client(editor)

    # Revoked with the action; the change form cannot give it back (nor give it to someone else).
    listing = "/admin/debates/apitoken/"
    response = admin.post(listing, {"action": "revoke", "_selected_action": [row.pk]})
    assert response.status_code == 302
    row.refresh_from_db()
    revoked_at = row.revoked_at
    assert revoked_at is not None
    form = {"name": "renamed", "user": alice.pk, "revoked_at_0": "", "revoked_at_1": "", "revoked_at": ""}
    assert admin.post(change, form).status_code == 302
    row.refresh_from_db()
    assert (row.name, row.user, row.revoked_at) == ("renamed", editor, revoked_at)
    assert tokens.user_for(_token) is None
    page = admin.get(change).content.decode()
    assert 'name="revoked_at' not in page and 'name="user"' not in page

    # Revoking again keeps the first time.
    admin.post(listing, {"action": "revoke", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.revoked_at == revoked_at
