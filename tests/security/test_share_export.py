"""A share link's export.json (hardening round three, low): a debate started through the OpenAI door
keeps the caller's system message and chat history (as "About you" and the evidence material, and
inside every prompt sent). The owner's export has them; a share-link visitor's has neither."""

from __future__ import annotations

import json

import pytest

from debates import sharing
from debates.api import starting
from debates.as_model.request import parse
from debates.models import Turn
from tests.security.conftest import english_client

pytestmark = pytest.mark.django_db

SYSTEM = "Our runway is 4 months; the CFO is Dana Reyes."
EARLIER = "Last quarter we lost the Acme contract."


@pytest.fixture
def door_debate(alice, libraries, no_runs):
    chat = parse(
        json.dumps(
            {
                "model": "agora-duel",
                "agora": {"personas": ["yinguang", "huineng"]},
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": EARLIER},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": "Should we hire seniors or train juniors?"},
                ],
            }
        ).encode()
    )
    debate = starting.start(chat.body, alice, door="openai.chat", unattended=True)
    # What a run stores: the exact messages sent, the caller's words among them.
    Turn.objects.create(
        debate=debate, key="duel:1:a", position=1, phase="duel", speaker_slug="a", speaker_name="A",
        messages=[{"role": "system", "content": f"About the user: {SYSTEM}"}, {"role": "user", "content": EARLIER}],
        text="Hire seniors.", state="done",
    )  # fmt: skip
    sharing.share(debate)
    return debate


def test_a_share_link_export_leaves_out_the_callers_messages(door_debate, alice):
    owners = english_client(alice).get(f"/debates/{door_debate.pk}/export.json").content.decode()
    assert SYSTEM in owners and EARLIER in owners, "the owner's own export keeps them"

    url = f"/debates/{door_debate.pk}/export.json?share={door_debate.share_token}"
    response = english_client().get(url)
    assert response.status_code == 200
    visitors = response.content.decode()
    assert SYSTEM not in visitors, "a share-link visitor got the caller's system message"
    assert EARLIER not in visitors, "a share-link visitor got the caller's chat history"
    assert "Hire seniors." in visitors, "the debate itself is still shared"
