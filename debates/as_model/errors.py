"""Errors as OpenAI's API sends them, so a client shows our message where it shows theirs:
`{"error": {"message", "type", "param", "code"}}` with the same statuses."""

from __future__ import annotations

from django.http import JsonResponse


def error(status: int, message: str, *, kind: str = "invalid_request_error", param=None, code=None) -> JsonResponse:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    reply = JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})
    if status == 401:
        reply["WWW-Authenticate"] = "Bearer"
    return reply


def invalid(message: str, param: str | None = None, code: str | None = None) -> JsonResponse:
    return error(400, message, param=param, code=code)


def unauthorized(message: str) -> JsonResponse:
    return error(401, message, code="invalid_api_key")


def too_many(message: str) -> JsonResponse:
    # OpenAI's own 429s name what ran out ("requests", "tokens"): here, running debates or views.
    return error(429, message, kind="requests", code="rate_limit_exceeded")


def not_found(message: str) -> JsonResponse:
    return error(404, message, code="model_not_found")
