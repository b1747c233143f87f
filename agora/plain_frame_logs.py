"""autobahn (daphne's WebSocket protocol) formats a debug line for every frame it sends, whether
or not debug logging is on: `self.log.debug("{func} sent {data_len} bytes …", func=hltype(…),
peer=hlval(…), data_len=hlval(…))` evaluates its arguments before the no-op logger drops them,
and with click installed (uvicorn, the MCP server's, brings it) each one is an ANSI-coloured
`click.style` call and an `inspect` lookup. A py-spy profile of one daphne at 100 debates × 3
viewers put 3.7% of the process's CPU there (bench/README.md, twenty-first session).

`install()` rebinds those two names in the autobahn modules that call them per frame to plain
versions: the same text, without colour codes, at the cost of an attribute read. A debug log,
where someone turns it on, reads the same words.
"""

from __future__ import annotations

import sys


def plain_type(obj: object) -> str:
    """What autobahn's `hltype` says (`<module.Qualified.name>`), without colour."""
    return f"<{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', 'unknown')}>"


def plain_value(val: object, color: str = "white", bold: bool = True) -> object:
    """What autobahn's `hlval` says, without colour: the value itself (the log formats it)."""
    return val


# The modules that call them on every frame sent or received.
_MODULES = ("autobahn.websocket.protocol", "autobahn.twisted.websocket")


def install() -> list[str]:
    """Rebind the helpers in those of `_MODULES` already imported (daphne imports both before it
    serves); returns the ones changed. Idempotent."""
    changed = []
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        module.hltype, module.hlval = plain_type, plain_value
        changed.append(name)
    return changed
