"""A request must arrive in time (issue 47: 1,500 connections trickling headers at a byte per 10 s
were all held).

Twisted's only clock on an HTTP connection is an idle timer (60 s) that every byte restarts, so a
client sending a byte now and then holds its connection, and its slot in the server, for ever.
Under daphne every HTTP/1.x connection here has two deadlines instead (the nginx and Apache
`mod_reqtimeout` rules):

- headers: the request line and headers must be complete within `AGORA_HEADER_TIMEOUT` seconds of
  the connection opening, or of the previous response on a kept-alive connection (which is then
  also how long an idle kept-alive connection stays open);
- body: it must not stall for `AGORA_BODY_TIMEOUT` seconds, and after those first seconds it must
  keep coming at `AGORA_BODY_MIN_RATE` bytes a second on average (a large upload over a slow link
  gets the time its size needs; a body trickled a byte at a time does not).

Past either, the connection is closed the way Twisted closes an idle one (`timeoutConnection`).
While the application works on a request there is no deadline here (daphne's `--http-timeout` is
that clock). 0 turns a deadline off.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from twisted.web.http import HTTPChannel, _GenericHTTPChannelProtocol

log = logging.getLogger(__name__)


class DeadlineChannel(HTTPChannel):
    """Twisted's HTTP/1.x channel with the header and body deadlines."""

    _phase: str | None = None  # "headers", "body" or None (the application has the request)
    _phase_started = 0.0
    _body_last = 0.0
    _body_received = 0
    _deadline_call = None

    def connectionMade(self):
        super().connectionMade()
        self._watch("headers")

    def allHeadersReceived(self):
        super().allHeadersReceived()
        self._watch("body")

    def rawDataReceived(self, data):
        if self._phase == "body" and not self._handlingRequest:
            self._body_received += len(data)
            self._body_last = time.monotonic()
        super().rawDataReceived(data)

    def allContentReceived(self):
        self._watch(None)
        super().allContentReceived()

    def requestDone(self, request):
        # Before Twisted goes on: it may parse a pipelined request at once, which sets its own phase.
        if self.persistent:
            self._watch("headers")
        super().requestDone(request)

    def connectionLost(self, reason):
        self._watch(None)
        super().connectionLost(reason)

    def _watch(self, phase: str | None) -> None:
        if self._deadline_call is not None and self._deadline_call.active():
            self._deadline_call.cancel()
        self._deadline_call = None
        self._phase = phase
        self._phase_started = self._body_last = time.monotonic()
        self._body_received = 0
        self._arm()

    def deadline(self) -> float | None:
        """When the current phase runs out (monotonic seconds), or None: no deadline."""
        if self._phase == "headers":
            timeout = settings.AGORA_HEADER_TIMEOUT
            return self._phase_started + timeout if timeout > 0 else None
        if self._phase == "body":
            timeout, rate = settings.AGORA_BODY_TIMEOUT, settings.AGORA_BODY_MIN_RATE
            if timeout <= 0:
                return None
            stalled = self._body_last + timeout
            if rate <= 0:
                return stalled
            return min(stalled, self._phase_started + timeout + self._body_received / rate)
        return None

    def _arm(self) -> None:
        deadline = self.deadline()
        if deadline is not None:
            from twisted.internet import reactor

            self._deadline_call = reactor.callLater(max(0.0, deadline - time.monotonic()), self._check)

    def _check(self) -> None:
        self._deadline_call = None
        deadline = self.deadline()
        if deadline is None or self.transport is None:
            return
        if time.monotonic() < deadline:  # the body kept coming: look again at its new deadline
            return self._arm()
        log.debug("closed a connection whose request %s did not arrive in time", self._phase)
        self._phase = None
        self.timeoutConnection()


def channel_with_deadlines(factory) -> _GenericHTTPChannelProtocol:
    """What `HTTPFactory.protocol` builds (Twisted's `_genericHTTPChannelProtocolFactory`), with
    the deadlines' channel in it."""
    return _GenericHTTPChannelProtocol(DeadlineChannel())
