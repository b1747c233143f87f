"""Live views open in this process, per viewer and per debate: the live page's WebSockets
(`debates.consumers`), the API's Server-Sent Event streams (`debates.api.stream`), every MCP
request over HTTP (`debates.mcp.http`: its event streams and `wait_for_debate` hold a connection
for as long as they like) and the OpenAI door's completions (`debates.as_model`) take their slots
from the same counters, so `AGORA_WS_PER_USER` bounds them all together per user (per address for
visitors without an account), and `AGORA_WS_PER_DEBATE` those that follow one debate.

Consumers and streams run on the process's one event loop, so plain counters suffice.
"""

from __future__ import annotations

from collections import Counter

from django.conf import settings
from django.utils.translation import gettext as _

from agora import proxies


class LiveCounts:
    def __init__(self) -> None:
        self.viewers: Counter = Counter()
        self.debates: Counter = Counter()

    def take(self, viewer: str, debate_id: int | None = None) -> bool:
        """One slot for `viewer` (on `debate_id`, if it follows one), or False when a cap is reached."""
        if self.viewers[viewer] >= settings.AGORA_WS_PER_USER or (
            debate_id is not None and self.debates[debate_id] >= settings.AGORA_WS_PER_DEBATE
        ):
            return False
        self.viewers[viewer] += 1
        if debate_id is not None:
            self.debates[debate_id] += 1
        return True

    def give_back(self, viewer: str, debate_id: int | None = None) -> None:
        for counter, key in ((self.viewers, viewer), (self.debates, debate_id)):
            if key is None:
                continue
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    def slot(self, viewer: str, debate_id: int | None = None) -> Slot | None:
        """A slot that gives itself back once, however many times it is released."""
        return Slot(self, viewer, debate_id) if self.take(viewer, debate_id) else None


def too_many() -> str:
    """What a request past the caps is told (the live page says its own, on code 4429)."""
    return _(
        "Too many live views open: at most %(per_user)d per user and %(per_debate)d per debate, "
        "event streams and live pages together. Close one and try again."
    ) % {"per_user": settings.AGORA_WS_PER_USER, "per_debate": settings.AGORA_WS_PER_DEBATE}


class Slot:
    def __init__(self, counts: LiveCounts, viewer: str, debate_id: int | None) -> None:
        self.counts, self.viewer, self.debate_id = counts, viewer, debate_id
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.counts.give_back(self.viewer, self.debate_id)


counts = LiveCounts()


def client_address(scope) -> str:
    """The address a visitor connects from: the TCP peer, or, where the peer is one of
    AGORA_TRUSTED_PROXIES, the last `X-Forwarded-For` entry (the one that proxy added;
    agora/proxies.py). Under `python -m agora.web` daphne's scope already says so; read here as
    well for any other server, where a client could have written the header itself."""
    client = scope.get("client") or ("unknown",)
    peer = str(client[0])
    if proxies.trusted(peer):
        forwarded = [value for name, value in scope.get("headers") or [] if name.lower() == b"x-forwarded-for"]
        return proxies.last_forwarded(forwarded) or peer
    return peer


def viewer_key(scope) -> str:
    """A signed-in user is one viewer however many tabs and streams; visitors without an account
    count per address (`client_address`)."""
    user = scope.get("user")
    if user is not None and user.is_authenticated:
        return user_key(user)
    return f"addr:{client_address(scope)}"


def user_key(user) -> str:
    return f"user:{user.pk}"
