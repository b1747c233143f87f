"""A chat completions request read as a debate to start: the last user message is the question;
system (and developer) messages say who asks ("About you"); earlier turns of the conversation
become material every speaker reads; the format's options travel in the extra field `agora`,
under the JSON API's names. What it cannot read is a `Bad` with OpenAI's `param`."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.utils.translation import gettext as _

from debates.as_model.catalogue import Choice, resolve
from debates.engine.i18n import language_of
from debates.engine.options import Option
from debates.options import described, union

# Set by the request's own fields (the model id, the messages), not by `agora`.
FROM_THE_REQUEST = ("topic", "format", "provider", "model")
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
EARLIER = {
    "zh": ("此前的对话", "用户", "助手", "（更早的消息未收入）"),
    "en": ("Earlier in this conversation", "User", "Assistant", "(earlier messages left out)"),
}


class Bad(Exception):
    def __init__(self, message: str, param: str | None = None, code: str | None = None, status: int = 400):
        super().__init__(message)
        self.message, self.param, self.code, self.status = message, param, code, status


@dataclass
class ChatRequest:
    model: str
    choice: Choice
    body: dict  # the JSON API's start body (`debates.api.schemas.DebateStart`)
    stream: bool
    include_usage: bool


def parse(raw: bytes) -> ChatRequest:
    try:
        data = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):
        # RecursionError: arrays or objects nested past Python's recursion limit (`[[[…]]]`).
        raise Bad(_("We could not parse the JSON body of your request.")) from None
    if not isinstance(data, dict):
        raise Bad(_("The request body must be a JSON object."))
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise Bad(_("You must provide a model parameter."), "model")
    choice = resolve(model)
    if choice is None:
        raise Bad(
            _("The model `%(model)s` does not exist: GET /models lists Agora’s formats as models.") % {"model": model},
            "model",
            "model_not_found",
            status=404,
        )
    if data.get("n", 1) not in (1, None):
        raise Bad(_("Agora answers with one debate: n must be 1."), "n")
    extra = data.get("agora") or {}
    if not isinstance(extra, dict):
        raise Bad(_("`agora` must be an object of the debate’s options."), "agora")
    for name in FROM_THE_REQUEST:
        if name in extra:
            raise Bad(
                _("Set by the request itself (the model and the last user message), not in `agora`."), f"agora.{name}"
            )
    topic, context, earlier = _read_messages(data.get("messages"))
    lang = language_of(topic)
    body = {**extra, "topic": topic, "format": choice.format}
    if choice.provider:
        body["provider"] = choice.provider
    if choice.model:
        body["model"] = choice.model
    about, material = _filled_from_chat("system"), _filled_from_chat("earlier")
    if context and about.name not in extra:
        if about.max_length and len(context) > about.max_length:
            raise Bad(
                _("The system message is longer than %(n)d characters, the most “%(field)s” holds.")
                % {"n": about.max_length, "field": _(about.label)},
                "messages",
            )
        body[about.name] = context
    if earlier and material.name not in extra:
        body[material.name] = _material(earlier, lang, material.max_length or 20000)
    options = data.get("stream_options") or {}
    return ChatRequest(
        model=model,
        choice=choice,
        body=body,
        stream=bool(data.get("stream")),
        include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
    )


def _filled_from_chat(source: str) -> Option:
    """The option a chat's `source` ("system", "earlier") fills: declared on the option itself."""
    return next(described(name) for name in union() if described(name).from_chat == source)


def _text(content, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(texts) != len(content):
            raise Bad(_("Agora reads text only: this message has a part that is not text."), where)
        return "\n".join(t for t in texts if isinstance(t, str))
    if content is None:
        return ""
    raise Bad(_("A message's content must be text."), where)


def _read_messages(messages) -> tuple[str, str, list[tuple[str, str]]]:
    """(the question, what the system messages say, the earlier turns as (role, text))."""
    if not isinstance(messages, list) or not messages:
        raise Bad(_("messages must be a non-empty list; the last one, the user's, is the question."), "messages")
    context, earlier = [], []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise Bad(_("Each message needs a role: system, user or assistant."), f"messages[{i}].role")
        text = _text(message.get("content"), f"messages[{i}].content").strip()
        if message["role"] in ("system", "developer"):
            context.append(text)
        elif message["role"] in ("user", "assistant") and text:
            earlier.append((message["role"], text))
    if messages[-1].get("role") != "user" or not earlier or earlier[-1][0] != "user":
        raise Bad(_("The last message must be the user's question."), f"messages[{len(messages) - 1}]")
    topic = earlier.pop()[1]
    return topic, "\n\n".join(c for c in context if c), earlier


def _material(earlier: list[tuple[str, str]], lang: str, limit: int) -> str:
    """The earlier turns as material, the latest kept first when they do not all fit."""
    heading, user, assistant, cut = EARLIER[lang]
    lines, size = [], len(heading) + len(cut) + 4
    for role, text in reversed(earlier):
        line = f"{user if role == 'user' else assistant}: {text}"
        if size + len(line) + 2 > limit:
            lines.append(cut)
            break
        lines.append(line)
        size += len(line) + 2
    return "\n\n".join([f"{heading}:", *reversed(lines)])
