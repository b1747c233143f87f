"""User-facing texts of the engine, translated by whoever shows them.

The engine has no Django and no idea who is watching: it says what it has to say as a `Text`, an
English msgid with its parameters. The web layer renders it with the viewer's catalogue (two
viewers of one debate in two languages each read their own); the terminal renders it as is.
`gettext_noop` only marks a msgid so `makemessages` puts it into the catalogue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def gettext_noop(msgid: str) -> str:
    return msgid


@dataclass(frozen=True)
class Text:
    msgid: str
    params: dict[str, Any] = field(default_factory=dict)

    def render(self, translate: Callable[[str], str] = gettext_noop) -> str:
        template = translate(self.msgid)
        if not self.params:
            return template
        # A parameter may itself be a Text (a label inside a sentence): same language.
        return template % {k: v.render(translate) if isinstance(v, Text) else v for k, v in self.params.items()}

    def __str__(self) -> str:
        return self.render()

    def as_dict(self) -> dict[str, Any]:
        params = {k: v.as_dict() if isinstance(v, Text) else v for k, v in self.params.items()}
        return {"msgid": self.msgid, "params": params}


def text(msgid: str, **params: Any) -> Text:
    return Text(msgid, params)
