"""What an upload read to, kept by its bytes' SHA-256: a start form that fails elsewhere (no
question, a persona missing) is posted again with the same files, and reading them again would
start a sandboxed child each time (seconds of CPU for a file slow to read, and both readers busy
for one user re-posting). A re-post of the same file gets the same sections, or the same refusal,
without a read. In this process only, and bounded in size: the oldest answers go first.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

from debates import documents

# What the answers kept may hold together, in characters of their JSON (one document is at most
# MAX_CHARS of text, ~1.6 MB as JSON): a few forms' worth of files, not a store.
MAX_KEPT_CHARS = 16 * 1024 * 1024
_kept: OrderedDict[str, str] = OrderedDict()
_lock = threading.Lock()


def read(name: str, data: bytes) -> dict:
    """The upload as a debate's options keep it (`documents.as_option`), read in the sandbox the
    first time these bytes come under this name; raises its `DocumentError`, kept too, except
    "the server is busy", which says nothing about the file."""
    key = hashlib.sha256(name.encode("utf-8", "replace") + b"\0" + data).hexdigest()
    with _lock:
        answer = _kept.get(key)
        if answer is not None:
            _kept.move_to_end(key)
    if answer is None:
        try:
            outcome = documents.extract_isolated(name, data)
        except documents.DocumentError as error:
            if error.text.msgid == documents.BUSY:
                raise
            outcome = error
        answer = json.dumps(documents.to_answer(outcome), ensure_ascii=False)
        _keep(key, answer)
    kept = json.loads(answer)
    if "error" in kept:
        raise documents.DocumentError.from_dict(kept["error"])
    return kept["document"]


def _keep(key: str, answer: str) -> None:
    with _lock:
        _kept[key] = answer
        while sum(map(len, _kept.values())) > MAX_KEPT_CHARS and len(_kept) > 1:
            _kept.popitem(last=False)


def forget() -> None:
    """Drop every answer kept (tests)."""
    with _lock:
        _kept.clear()
