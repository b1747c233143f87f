"""User-facing texts of the engine, translated by whoever shows them.

The engine has no Django and no idea who is watching: it says what it has to say as a `Text`, an
English msgid with its parameters. A `Text` *is* a string (its English rendering), so the terminal,
logs and tests read it as one; the web layer renders it again with each viewer's catalogue (two
viewers of one debate in two languages each read their own) from `as_dict()`, which is what the
database keeps. `gettext_noop` only marks a msgid so `makemessages` puts it into the catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

CJK = re.compile("[\u3400-\u9fff]")  # a Chinese character: what makes a question Chinese


def language_of(question: str) -> str:
    """The language a debate is held in: "zh" if the question has Chinese in it, else "en".
    Every prompt, fixed line, form label and parsed heading of the debate follows it."""
    return "zh" if CJK.search(question or "") else "en"


def say(lang: str, zh: str, en: str) -> str:
    """The engine's words to a model (prompts, forms), in the debate's language. Not a msgid:
    these are instructions to the model, written per language, never shown through a catalogue."""
    return en if lang == "en" else zh


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


# The msgid of a person's name inside a message (`named`): "%(name)s", with the name in each
# language beside it, so a page can show its own reader's.
NAME = "%(name)s"


def named(name: str, name_en: str, lang: str) -> Text:
    """A persona's name inside a message: in `lang` wherever the engine renders it (the report's
    Markdown, in the debate's language), and in each reader's language where a page renders the
    stored message (`for_reader`)."""
    return Text(NAME, {"name": name_en if lang == "en" and name_en else name, "zh": name, "en": name_en})


def for_reader(message: Text, english: bool) -> Text:
    """`message` with every name inside it (`named`) as an English reader, or another, calls it."""
    if message.msgid == NAME and "zh" in message.params:
        zh, en = message.params["zh"], message.params.get("en") or ""
        return Text(NAME, {**message.params, "name": en if english and en else zh})
    if not any(isinstance(v, Text) for v in message.params.values()):
        return message
    params = {k: for_reader(v, english) if isinstance(v, Text) else v for k, v in message.params.items()}
    return Text(message.msgid, params)


def verbatim(value: str) -> Text:
    """Text that is not translated (a provider's own message, a model's words)."""
    return Text("%(text)s", {"text": value})
