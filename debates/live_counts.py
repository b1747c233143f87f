"""Live views open in this process, per viewer and per debate: the live page's WebSockets
(`debates.consumers`) and the API's Server-Sent Event streams (`debates.api.stream`) take their
slots from the same counters, so `AGORA_WS_PER_USER` and `AGORA_WS_PER_DEBATE` bound both together.

Consumers and streams run on the process's one event loop, so plain counters suffice.
"""

from __future__ import annotations

from collections import Counter

from django.conf import settings


class LiveCounts:
    def __init__(self) -> None:
        self.viewers: Counter = Counter()
        self.debates: Counter = Counter()

    def take(self, viewer: str, debate_id: int) -> bool:
        """One slot for `viewer` on `debate_id`, or False when either cap is reached."""
        if (
            self.viewers[viewer] >= settings.AGORA_WS_PER_USER
            or self.debates[debate_id] >= settings.AGORA_WS_PER_DEBATE
        ):
            return False
        self.viewers[viewer] += 1
        self.debates[debate_id] += 1
        return True

    def give_back(self, viewer: str, debate_id: int) -> None:
        for counter, key in ((self.viewers, viewer), (self.debates, debate_id)):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]

    def slot(self, viewer: str, debate_id: int) -> Slot | None:
        """A slot that gives itself back once, however many times it is released."""
        return Slot(self, viewer, debate_id) if self.take(viewer, debate_id) else None


class Slot:
    def __init__(self, counts: LiveCounts, viewer: str, debate_id: int) -> None:
        self.counts, self.viewer, self.debate_id = counts, viewer, debate_id
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.counts.give_back(self.viewer, self.debate_id)


counts = LiveCounts()


def client_address(scope) -> str:
    """The address a visitor connects from.

    Behind the documented proxy (docs/production.md: nginx's `proxy_set_header X-Forwarded-For
    $remote_addr`, daphne's `--proxy-headers`, `BEHIND_HTTPS_PROXY=1`) daphne puts the header's
    *first* entry in the scope. A proxy that appends to the header instead of replacing it
    (`$proxy_add_x_forwarded_for`) leaves the client's own header in front, so that entry is
    whatever the client wrote; the *last* entry is the one the nearest proxy added. Behind a proxy
    that one is used (where the proxy replaces the header, it is the only one). Without
    `BEHIND_HTTPS_PROXY` no header is read: a client could write any."""
    if settings.BEHIND_HTTPS_PROXY:
        forwarded = [value for name, value in scope.get("headers") or [] if name.lower() == b"x-forwarded-for"]
        last = forwarded[-1].decode("latin-1").split(",")[-1].strip() if forwarded else ""
        if last:
            return last
    client = scope.get("client") or ("unknown",)
    return str(client[0])


def viewer_key(scope) -> str:
    """A signed-in user is one viewer however many tabs and streams; visitors without an account
    count per address (`client_address`)."""
    user = scope.get("user")
    if user is not None and user.is_authenticated:
        return user_key(user)
    return f"addr:{client_address(scope)}"


def user_key(user) -> str:
    return f"user:{user.pk}"
