"""How many request-body bytes one web process holds at once (issue 47, "bodies add up").

Every body within its route's limit used to be accepted however many arrived together: 160
parallel 28 MiB posts took daphne from 213 MB to 4.7 GB. daphne holds a body in a temporary file
while it arrives and then puts all of it on the application's queue at once, so a body costs its
size in memory until the application has read it and answered. The budget
(`AGORA_MAX_BODIES_BYTES`) is the sum of the bodies being received or handled at once: a request
takes its declared length when its headers end (a chunked one, each chunk as it comes), and one
that would pass the budget is answered 503 at once (agora/body_limit.py). Its bytes come back when
the application has read the body off the queue (Django spools what it reads to disk past
FILE_UPLOAD_MAX_MEMORY_SIZE), when the response is finished, when the connection is lost, or when
it is refused — whichever is first.

Memory freed by a large body stays in the C allocator's arenas (glibc keeps freed chunks of many
threads' arenas for reuse), so a moment after the last held body is given back (the application's
thread may still be dropping its copy) the process asks glibc to return what it can
(`malloc_trim`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

from django.conf import settings

log = logging.getLogger(__name__)

# Bodies at least this large are worth a malloc_trim once freed (smaller ones are pymalloc's or
# fit the arenas' free lists, and a trim walks the whole heap).
TRIM_FROM = 1024 * 1024
TRIM_AFTER = 0.5  # seconds after the budget is back to zero


def _malloc_trim():
    """glibc's malloc_trim, or None (musl, macOS, Windows: nothing to ask)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


class BodyBudget:
    """Bytes of request bodies held by this process. Used from the server's one event-loop thread
    (daphne's reactor), so it needs no lock."""

    def __init__(self):
        self.held = 0
        self._large_freed = False
        self._trim_pending = False
        self._trim = _malloc_trim()

    @property
    def total(self) -> int:
        return settings.AGORA_MAX_BODIES_BYTES

    def take(self, size: int) -> bool:
        """Hold `size` more bytes if they fit; False (nothing held) if they would pass the budget."""
        if size > 0 and self.held + size > self.total:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held = max(0, self.held - size)
        if size >= TRIM_FROM:
            self._large_freed = True
        if self.held == 0 and self._large_freed and self._trim is not None and not self._trim_pending:
            from twisted.internet import reactor

            self._trim_pending = True
            reactor.callLater(TRIM_AFTER, self._return_memory)

    def _return_memory(self) -> None:
        self._trim_pending = False
        if self.held:  # new bodies meanwhile: trimmed when they are given back
            return
        self._large_freed = False
        self._trim(0)


BUDGET = BodyBudget()
