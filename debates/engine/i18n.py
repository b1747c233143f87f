"""User-facing texts of the engine, translated by whoever shows them.

The engine has no Django and no idea who is watching: it says what it has to say as a `Text`, an
English msgid with its parameters. A `Text` *is* a string (its English rendering), so the terminal,
logs and tests read it as one; the web layer renders it again with each viewer's catalogue (two
viewers of one debate in two languages each read their own) from `as_dict()`, which is what the
database keeps. `gettext_noop` only marks a msgid so `makemessages` puts it into the catalogue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def gettext_noop(msgid: str) -> str:
    return msgid


def _fill(msgid: str, params: Mapping[str, Any], translate: Callable[[str], str]) -> str:
    template = translate(msgid)
    if not params:
        return template
    # A parameter may itself be a Text (a label inside a sentence): same language.
    values = {k: v.render(translate) if isinstance(v, Text) else v for k, v in params.items()}
    return template % values


class Text(str):
    msgid: str
    params: dict[str, Any]

    def __new__(cls, msgid: str, params: Mapping[str, Any] | None = None):
        params = dict(params or {})
        made = super().__new__(cls, _fill(msgid, params, gettext_noop))
        made.msgid, made.params = msgid, params
        return made

    def render(self, translate: Callable[[str], str] = gettext_noop) -> str:
        return _fill(self.msgid, self.params, translate)

    def as_dict(self) -> dict[str, Any]:
        params = {k: v.as_dict() if isinstance(v, Text) else v for k, v in self.params.items()}
        return {"msgid": self.msgid, "params": params}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | str) -> Text:
        """The stored form back (a plain string stays a string, translated as itself)."""
        if isinstance(data, str):
            return cls(data)
        params = {
            k: cls.from_dict(v) if isinstance(v, Mapping) and "msgid" in v else v
            for k, v in dict(data.get("params") or {}).items()
        }
        return cls(str(data.get("msgid", "")), params)

    def __reduce__(self):
        return (Text, (self.msgid, self.params))


def text(msgid: str, **params: Any) -> Text:
    return Text(msgid, params)


def verbatim(value: str) -> Text:
    """Text that is not translated (a provider's own message, a model's words)."""
    return Text("%(text)s", {"text": value})
