"""`/openai/v1/models` and `/openai/v1/chat/completions`: the OpenAI-compatible door's views.

A thin shell: the bearer is one of the user's API tokens (`debates.api.tokens`); the debate is
started as the JSON API starts one (`debates.api.starting`, through the `openai.chat` door of
`debates.admission`: the running limit and budgets hold) and followed as the event stream follows
one (`debates.api.stream.follow`). A client that hangs up stops nothing: the debate runs on the
server's loop, not in this request, and is kept on its owner's home page."""

from __future__ import annotations

import json
import time

from asgiref.sync import sync_to_async
from django.http import JsonResponse, StreamingHttpResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from debates import access, exports, live_counts
from debates.admission import Refused
from debates.api import starting, tokens
from debates.api.stream import follow
from debates.as_model import catalogue, errors
from debates.as_model.reply import CONTENT, Reply
from debates.as_model.request import Bad, parse
from debates.models import Debate
from debates.templatetags.agora import error_for, tr


def _bearer(request) -> str:
    kind, _sep, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if kind.lower() == "bearer" else ""


def _caller(request):
    return tokens.caller_for(_bearer(request), request=request)


def _no_token():
    return errors.unauthorized(
        _("This needs an Agora API token as the API key (“Bearer <token>”): make one on your API tokens page.")
    )


def _listing(request, model_id: str | None = None) -> JsonResponse:
    """The model list, or one model of it, in the caller's language. Runs in a worker thread."""
    caller = _caller(request)
    if caller is None:
        return _no_token()
    with translation.override(caller.language or translation.get_language()):
        rows = catalogue.listed(int(time.time()))
        if model_id is None:
            return JsonResponse({"object": "list", "data": rows}, json_dumps_params={"ensure_ascii": False})
        row = next((r for r in rows if r["id"] == model_id), None)
        if row is None:
            return errors.not_found(_("The model `%(model)s` does not exist.") % {"model": model_id})
    return JsonResponse(row, json_dumps_params={"ensure_ascii": False})


@require_GET
async def models(request):
    return await sync_to_async(_listing)(request)


@require_GET
async def model(request, model_id: str):
    return await sync_to_async(_listing)(request, model_id)


@csrf_exempt
@require_POST
async def chat_completions(request):
    caller = await sync_to_async(_caller)(request)
    if caller is None:
        return _no_token()
    with translation.override(caller.language or translation.get_language()):
        if caller.read_only:  # every chat here starts a debate
            return errors.error(403, tokens.read_only_refusal(), kind="permission_error")
        try:
            chat = await sync_to_async(parse)(request.body)
        except Bad as bad:
            return errors.error(bad.status, bad.message, param=bad.param, code=bad.code)
        # Following the debate is one of the user's live views, like the live page and the API's
        # stream; taken before the debate starts (a new debate has no other viewer to count).
        slot = live_counts.counts.slot(live_counts.user_key(caller.user))
        if slot is None:
            return errors.too_many(_("Too many live views open: close one and try again."))
        try:
            debate = await sync_to_async(starting.start)(chat.body, caller.user, door="openai.chat", unattended=True)
        except starting.Invalid as invalid:
            slot.release()
            param, message = _first_error(invalid.errors)
            return errors.invalid(message, param)
        except Refused as refusal:
            slot.release()
            return errors.error(refusal.status, str(refusal), kind="requests", code="rate_limit_exceeded")
    following = _Following(request, caller, debate, chat, slot)
    if chat.stream:
        reply = StreamingHttpResponse(following.chunks(), content_type="text/event-stream; charset=utf-8")
        reply["Cache-Control"] = "no-cache"
        reply["X-Accel-Buffering"] = "no"
    else:
        reply = JsonResponse(await following.completion(), json_dumps_params={"ensure_ascii": False})
    reply["X-Agora-Debate"] = following.url
    return reply


def _first_error(errors_by_field: dict[str, list[str]]) -> tuple[str | None, str]:
    """OpenAI's errors name one parameter: the first field's, under the request's own names."""
    field, messages = next(iter(errors_by_field.items()))
    if field == "topic":
        param = "messages"
    elif field == "__all__":
        param = None
    else:
        param = f"agora.{field}"
    others = [f"{name}: {m}" for name, ms in list(errors_by_field.items())[1:] for m in ms]
    return param, " ".join([*messages, *others])


class _Following:
    """One request's view of its debate, from start to end."""

    def __init__(self, request, caller: tokens.Caller, debate: Debate, chat, slot):
        self.caller, self.debate, self.chat, self.slot = caller, debate, chat, slot
        self.url = request.build_absolute_uri(debate.get_absolute_url())
        self.id = f"chatcmpl-agora-{debate.pk}"
        self.created = int(time.time())
        self.language = exports.debate_language(debate)  # the transcript reads as the debate is held
        self.internals = access.shows_internals(caller.user)
        self.reply = Reply()

    async def _events(self):
        """(kind, text) pieces as the debate happens; None for a quiet spell."""
        # A revoked token ends the request at the ASGI layer (debates/api/live_tokens.py).
        changed = follow(self.debate.pk, None, language=self.language, internals=self.internals)
        try:
            async for item in changed:
                if item is None:
                    yield None
                    continue
                event, data, _id = item
                with translation.override(self.language):
                    for piece in self.reply.on(event, data):
                        yield piece
        finally:
            await changed.aclose()
            self.slot.release()

    def _ending(self) -> tuple[str, dict]:
        debate = Debate.objects.get(pk=self.debate.pk)
        with translation.override(self.language):
            detail = error_for(tr(debate.status_text or debate.status_detail), self.internals)
            answer = self.reply.answer(status=debate.status, detail=str(detail or ""), url=self.url)
        usage = {
            "prompt_tokens": debate.prompt_tokens,
            "completion_tokens": debate.completion_tokens,
            "total_tokens": debate.prompt_tokens + debate.completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": debate.reasoning_tokens},
        }
        return answer, usage

    def _chunk(self, delta: dict, finish: str | None = None) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.chat.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"

    async def chunks(self):
        yield self._chunk({"role": "assistant", "content": ""})
        async for piece in self._events():
            if piece is None:
                yield b": the debate goes on\n\n"  # a comment: keeps proxies and clients waiting
            else:
                yield self._chunk({piece[0]: piece[1]})
        answer, usage = await sync_to_async(self._ending)()
        yield self._chunk({CONTENT: answer})
        yield self._chunk({}, "stop")
        if self.chat.include_usage:
            body = {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.chat.model,
                "choices": [],
                "usage": usage,
            }
            yield b"data: " + json.dumps(body).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    async def completion(self) -> dict:
        async for _piece in self._events():
            pass
        answer, usage = await sync_to_async(self._ending)()
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.chat.model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": answer,
                        "reasoning_content": "".join(self.reply.reasoning),
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
