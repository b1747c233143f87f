"""The stdlib HTTP server the test kit's small fakes share (the search fake, the conformance
replays, the provider-reach probe)."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    """A threading HTTP server whose request threads die with the test process, and which takes a
    client hanging up (a retry, a cancelled turn, a pooled connection closed at teardown) for what
    it is, not for the server's failure: socketserver would print that traceback into the run."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
