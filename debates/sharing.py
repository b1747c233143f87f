"""A debate's share link: shared under a new unguessable token, or revoked.

Revoking stops the old link at once (`access.by_share` compares the token) and ends the live views
opened through it: every language's channel group of the debate is told `debate.revoked`, and the
consumers of viewers who came by the link close with 4403 (`debates.consumers`). Any door that
shares or revokes (the page's Share button, an API still to come) goes through here.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from debates import frames
from debates.models import Debate, new_share_token


def share(debate: Debate) -> None:
    """Share under a new link (a link given out before stops working)."""
    debate.shared, debate.share_token = True, new_share_token()
    debate.save(update_fields=["shared", "share_token"])


def revoke(debate: Debate) -> None:
    """Stop sharing, and close the live views opened through the link (nothing if not shared)."""
    if not debate.shared:
        return
    debate.shared = False
    debate.save(update_fields=["shared"])
    close_shared_sockets(debate.pk)


def close_shared_sockets(debate_id: int) -> None:
    """Revoking a share link ends the live views opened through it (from a view: sync)."""
    layer = get_channel_layer()
    for name in frames.groups(debate_id).values():
        async_to_sync(layer.group_send)(name, {"type": "debate.revoked"})
