"""LLM faults, end to end: a real debate (a one-round duel: two speeches and a closing synthesis)
streams from the fake OpenAI server over loopback HTTP while the server injects faults.

For every fault: the provider retries where that can help, otherwise the turn fails with a reason
a user can act on, shown on the live page next to the text that was kept; the token ledger equals
what the fake server reported for the calls whose replies were used, plus the engine's estimates for
the failed attempts. "Resume" and "Retry turn" then regenerate only the failed turn.
"""

from __future__ import annotations

import asyncio
import html
import socket
import time

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.test import Client, override_settings

from debates import runner
from debates.forms import create_debate
from debates.models import Debate, Report, Turn
from debates.rendering import redact_urls
from testkit.fake_openai import FakeOpenAIServer, Fault, Reply, default_reply
from testkit.prose import prose
from tests.reliability.conftest import (
    RETRIES,
    TIMEOUT,
    NthTurn,
    completed,
    failed_attempt_estimate,
    reported_usage,
    wait_for_status,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "念佛与参禅，哪条路更适合现代人修行？"
TURNS = 3  # a one-round duel: speaker A, speaker B, the closing synthesis


def as_owner_sees(error: str) -> str:
    """An owner who is not staff reads "the provider" where the error names its address."""
    return redact_urls(error, "the provider")


# -- helpers --------------------------------------------------------------------------------------


async def _create(owner=None) -> Debate:
    debate, errors = await database_sync_to_async(create_debate)(
        {"topic": QUESTION, "format": "duel", "rounds": 1}, owner
    )
    assert not errors, errors
    return debate


async def _turns(debate) -> list[Turn]:
    return await database_sync_to_async(lambda: list(Turn.objects.filter(debate_id=debate.pk)))()


async def _debate(debate) -> Debate:
    return await database_sync_to_async(Debate.objects.get)(pk=debate.pk)


async def _client_for(user, language="en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    if user is not None:
        await sync_to_async(client.force_login)(user)
    return client


async def _page(client: Client, debate) -> str:
    response = await sync_to_async(client.get)(f"/debates/{debate.pk}/")
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def _requests_for(server, turn: Turn):
    return [r for r in server.chat_requests if r.messages == turn.messages]


async def assert_ledger_exact(debate, server) -> Debate:
    """Debate totals == usage the server reported for every reply that was used + the engine's
    estimate for every failed attempt (the current one, and those kept in the turns' histories).
    Computed independently of the sink's own arithmetic, then cross-checked row by row."""
    debate = await _debate(debate)
    turns = await _turns(debate)
    used = [r for r in server.chat_requests if completed(r)]
    prompt = sum(reported_usage(r)[0] for r in used)
    completion = sum(reported_usage(r)[1] for r in used)
    for turn in turns:
        if turn.state == Turn.State.DONE:
            # The turn's row carries exactly the usage of the last reply the server gave for it.
            last = [r for r in used if r.messages == turn.messages][-1]
            assert (turn.prompt_tokens, turn.completion_tokens) == reported_usage(last), turn.key
            assert not turn.usage_estimated
        else:
            estimate = failed_attempt_estimate(turn.messages, turn.text)
            assert (turn.prompt_tokens, turn.completion_tokens) == estimate, turn.key
            prompt += estimate[0]
            completion += estimate[1]
        for attempt in turn.history:
            estimate = failed_attempt_estimate(turn.messages, attempt["text"])
            assert (attempt["prompt_tokens"], attempt["completion_tokens"]) == estimate, (turn.key, attempt)
            prompt += estimate[0]
            completion += estimate[1]
    assert (debate.prompt_tokens, debate.completion_tokens) == (prompt, completion)
    report = await database_sync_to_async(lambda: Report.objects.filter(debate_id=debate.pk).first())()
    if report is not None:  # the report's own ledger agrees with the meter
        ledger = report.data["ledger"]
        assert (ledger["prompt_tokens"], ledger["completion_tokens"]) == (prompt, completion)
    return debate


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- retried faults: the debate still finishes ------------------------------------------------------


async def test_rate_limit_with_retry_after_is_retried_after_the_wait(libraries, fast_llm):
    fast_llm.inject(Fault.rate_limit(retry_after=0.3), times=1)
    debate = await _create()
    assert await runner.execute(debate.pk) == "done"

    turns = await _turns(debate)
    assert [t.state for t in turns] == ["done"] * TURNS
    first = _requests_for(fast_llm, turns[0])
    assert [r.status for r in first] == [429, 200], "two attempts recorded for the first turn"
    waited = first[1].started - first[0].finished
    assert waited >= 0.25, f"Retry-After 0.3 s honoured (waited {waited:.2f} s)"
    assert len(fast_llm.chat_requests) == TURNS + 1
    debate = await assert_ledger_exact(debate, fast_llm)
    assert debate.status == "done"


async def test_server_error_is_retried(libraries, fast_llm):
    fast_llm.inject(Fault.server_error(), times=1, when=NthTurn(2))
    debate = await _create()
    assert await runner.execute(debate.pk) == "done"

    turns = await _turns(debate)
    assert [t.state for t in turns] == ["done"] * TURNS
    assert [r.status for r in _requests_for(fast_llm, turns[1])] == [500, 200]
    assert not any(t.error for t in turns)
    await assert_ledger_exact(debate, fast_llm)


async def test_malformed_chunk_is_retried(libraries, fast_llm):
    fast_llm.inject(Fault.malformed(), times=1)
    debate = await _create()
    assert await runner.execute(debate.pk) == "done"

    turns = await _turns(debate)
    assert [t.state for t in turns] == ["done"] * TURNS
    attempts = _requests_for(fast_llm, turns[0])
    assert [r.fault for r in attempts] == ["malformed", None]
    assert "oops" not in turns[0].text, "the broken chunk's text never reaches the turn"
    await assert_ledger_exact(debate, fast_llm)


async def test_reply_longer_than_any_limit_is_bounded_by_max_tokens(libraries, fast_llm):
    # Ordinary text that never loops, so max_tokens, not the repetition cut, is what bounds it.
    fast_llm.script = lambda body: default_reply(body) + prose(6000)
    fast_llm.inject(Fault.long(tokens=5000), times=None)
    debate = await _create()
    assert await runner.execute(debate.pk) == "done"

    turns = await _turns(debate)
    assert [t.state for t in turns] == ["done"] * TURNS
    for turn in turns:
        (request,) = _requests_for(fast_llm, turn)
        limit = request.body["max_tokens"]
        assert isinstance(limit, int) and 0 < limit < 5000, "every request carries max_tokens"
        assert len(request.tokens) == limit, "the server stopped at the limit, not at 5000"
        assert turn.completion_tokens == limit <= 700  # the duel's speech/closing limits
        assert turn.text == request.text, "the whole bounded reply is kept"
        assert 0 < len(turn.summary) <= 80, "summaries stay within the duel's 80-character limit"
    await assert_ledger_exact(debate, fast_llm)


# -- faults that fail the turn: the reason is on the page, the text is kept, resume works ------------


async def test_hang_fails_the_turn_with_the_reason_on_the_page_and_resume_finishes(libraries, fast_llm, alice):
    fast_llm.inject(Fault.hang(), times=None, when=NthTurn(2))
    debate = await _create(owner=alice)
    started = time.monotonic()
    assert await runner.execute(debate.pk) == "failed"
    elapsed = time.monotonic() - started
    assert elapsed >= TIMEOUT * (RETRIES + 1), "a silent server is retried before the turn fails"
    assert elapsed < TIMEOUT * (RETRIES + 1) + 5

    first, second = await _turns(debate)
    assert first.state == "done" and first.text
    assert second.state == "failed"
    reason = f"no answer from {fast_llm.base_url} within {TIMEOUT:g} s (model fake-model)"
    assert second.error.startswith(reason), second.error
    assert "check it, or raise the provider's timeout" in second.error
    assert len(_requests_for(fast_llm, second)) == RETRIES + 1
    debate = await assert_ledger_exact(debate, fast_llm)
    assert debate.status == "failed"
    assert reason in debate.status_detail

    owner = await _client_for(alice)
    page = await _page(owner, debate)
    assert f"This turn failed: {as_owner_sees(reason)}" in page
    assert first.text.split("] ", 1)[1] in page, "the earlier turn's text stays on the page"
    # One way on, and the page says which: retry the failed turn (Resume would do the same thing).
    assert f"/turns/{second.pk}/retry/" in page and f"/debates/{debate.pk}/resume/" not in page
    assert "Press “Retry turn” there" in page
    zh_page = await _page(await _client_for(alice, "zh-hans"), debate)
    assert f"本次发言失败： {redact_urls(reason, '模型服务商')}" in zh_page, "the default language labels it too"

    # Resume, from the page's button, once the server behaves again.
    fast_llm.clear_faults()
    before = len(fast_llm.chat_requests)
    response = await sync_to_async(owner.post)(f"/debates/{debate.pk}/resume/")
    assert response.status_code == 302
    assert await wait_for_status(debate.pk) == "done"

    new = fast_llm.chat_requests[before:]
    assert len(new) == 2, "only the failed turn and the closing synthesis are requested again"
    assert all(r.messages != first.messages for r in new), "a finished turn is never re-requested"
    first_after, second_after, close = await _turns(debate)
    assert first_after.text == first.text
    assert second_after.state == "done" and second_after.error == ""
    assert [(a["state"], a["error"]) for a in second_after.history] == [("failed", second.error)]
    assert close.state == "done"
    await assert_ledger_exact(debate, fast_llm)
    page = await _page(owner, debate)
    assert "This turn failed" not in page


async def test_disconnect_mid_stream_keeps_the_partial_text_and_resume_regenerates(libraries, fast_llm, alice):
    fast_llm.inject(Fault.disconnect(after=4), times=1, when=NthTurn(2))
    debate = await _create(owner=alice)
    assert await runner.execute(debate.pk) == "failed"

    first, second = await _turns(debate)
    (cut,) = _requests_for(fast_llm, second)
    assert cut.outcome == "disconnected" and len(cut.tokens) == 4
    assert second.state == "failed"
    assert second.text == cut.text != "", "the partial text is kept in the database"
    assert second.error == (
        f"the connection to {fast_llm.base_url} dropped during the reply (model fake-model); "
        "the server may have restarted or a proxy cut the connection"
    )
    await assert_ledger_exact(debate, fast_llm)

    owner = await _client_for(alice)
    page = await _page(owner, debate)
    assert cut.text.strip() in page, "and on the page"
    assert f"This turn failed: {as_owner_sees(second.error)}" in page

    before = len(fast_llm.chat_requests)
    assert await runner.execute(debate.pk) == "done"  # resume: what the worker would call
    new = fast_llm.chat_requests[before:]
    assert len(new) == 2 and all(r.messages != first.messages for r in new)
    _, regenerated, _ = await _turns(debate)
    assert regenerated.state == "done"
    assert regenerated.history == [
        {
            "text": cut.text,
            "error": second.error,
            "state": "failed",
            "prompt_tokens": second.prompt_tokens,
            "completion_tokens": second.completion_tokens,
            "estimated": True,
            "cost": None,  # the fake model has no price: unknown, not free
        }
    ]
    await assert_ledger_exact(debate, fast_llm)


async def test_malformed_chunk_after_text_fails_the_turn_without_replaying(libraries, fast_llm):
    fast_llm.inject(Fault.malformed(after=3), times=1, when=NthTurn(1))
    debate = await _create()
    assert await runner.execute(debate.pk) == "failed"

    (turn,) = await _turns(debate)
    (request,) = _requests_for(fast_llm, turn)  # text already shown: never streamed twice
    assert turn.text == request.text and len(request.tokens) == 3
    assert "sent a malformed stream chunk" in turn.error and "Try again" in turn.error, turn.error
    await assert_ledger_exact(debate, fast_llm)


async def test_empty_reply_fails_clearly_and_retry_turn_regenerates_it(libraries, fast_llm, alice):
    fast_llm.inject(Fault.empty(), times=None, when=NthTurn(2))
    debate = await _create(owner=alice)
    assert await runner.execute(debate.pk) == "failed"

    first, second = await _turns(debate)
    assert len(_requests_for(fast_llm, second)) == RETRIES + 1, "an empty reply is worth retrying"
    reason = f"model fake-model on {fast_llm.base_url} returned an empty reply"
    assert second.state == "failed" and second.error.startswith(reason), second.error
    assert "try again, raise max_tokens, or choose another model" in second.error
    await assert_ledger_exact(debate, fast_llm)
    owner = await _client_for(alice)
    assert f"This turn failed: {as_owner_sees(reason)}" in await _page(owner, debate)

    fast_llm.clear_faults()
    before = len(fast_llm.chat_requests)
    response = await sync_to_async(owner.post)(f"/debates/{debate.pk}/turns/{second.pk}/retry/")
    assert response.status_code == 302
    assert await wait_for_status(debate.pk) == "done"
    new = fast_llm.chat_requests[before:]
    assert len(new) == 2 and all(r.messages != first.messages for r in new)
    _, retried, _ = await _turns(debate)
    assert retried.state == "done" and retried.text
    assert [a["error"] for a in retried.history] == [second.error]
    await assert_ledger_exact(debate, fast_llm)


async def test_crash_during_a_regenerated_turn_keeps_the_ledger_exact(libraries, fast_llm):
    """A process that dies while a failed turn is being regenerated leaves that turn "running";
    the next resume must charge the crashed attempt for what it sent, not re-charge the attempt
    before it."""
    fast_llm.inject(Fault.disconnect(after=6), times=1, when=NthTurn(2))
    debate = await _create()
    assert await runner.execute(debate.pk) == "failed"

    # The regenerated attempt hangs; the "crash" is a cancel plus restoring the rows as they were
    # while it ran (a killed process writes nothing more).
    fast_llm.inject(Fault.hang(), times=None)
    with override_settings(AGORA_PROVIDER_TIMEOUT=30):
        task = asyncio.create_task(runner.execute(debate.pk))
        for _ in range(500):
            rows = await _turns(debate)
            if rows[1].state == "running":
                break
            await asyncio.sleep(0.01)
        running = rows[1]
        assert running.state == "running" and running.history
        assert (running.prompt_tokens, running.completion_tokens) == (0, 0), (
            "a running attempt has not been charged yet; the earlier one is in its history"
        )
        mid_debate = await _debate(debate)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    def restore():
        Turn.objects.filter(pk=running.pk).update(
            state="running",
            text=running.text,
            error=running.error,
            history=running.history,
            prompt_tokens=running.prompt_tokens,
            completion_tokens=running.completion_tokens,
            usage_estimated=running.usage_estimated,
        )
        Debate.objects.filter(pk=debate.pk).update(
            status="running", prompt_tokens=mid_debate.prompt_tokens, completion_tokens=mid_debate.completion_tokens
        )

    await database_sync_to_async(restore)()
    fast_llm.clear_faults()
    assert await runner.execute(debate.pk) == "done"
    _, turn, _ = await _turns(debate)
    assert [a["state"] for a in turn.history] == ["failed", "interrupted"]
    await assert_ledger_exact(debate, fast_llm)


# -- a provider that is down fails fast, naming the fix ----------------------------------------------


async def test_unreachable_server_fails_fast_naming_the_url(libraries, fake_llm, alice):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with override_settings(OPENAI_BASE_URL=url, AGORA_PROVIDER_TIMEOUT=30, AGORA_PROVIDER_BACKOFF=0.5):
        debate = await _create(owner=alice)
        started = time.monotonic()
        assert await runner.execute(debate.pk) == "failed"
        assert time.monotonic() - started < 2.0, "not retried: retrying cannot start a server"

    (turn,) = await _turns(debate)
    reason = f"cannot reach {url}: is the server running? Check the base URL and port"
    assert turn.error.startswith(reason), turn.error
    assert turn.text == ""
    debate = await _debate(debate)
    assert debate.status == "failed" and reason in debate.status_detail
    assert f"This turn failed: {as_owner_sees(reason)}" in await _page(await _client_for(alice), debate)


async def test_rejected_api_key_says_to_set_openai_api_key(libraries, alice, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0000-9876")
    with FakeOpenAIServer(api_key="sk-right-key-1111-2222") as server:
        server.script = lambda body: Reply(text="never sent")
        with override_settings(OPENAI_BASE_URL=server.base_url, AGORA_PROVIDER_TIMEOUT=30):
            debate = await _create(owner=alice)
            started = time.monotonic()
            assert await runner.execute(debate.pk) == "failed"
            assert time.monotonic() - started < 2.0
        assert [r.status for r in server.chat_requests] == [401], "a refused key is not retried"

    (turn,) = await _turns(debate)
    assert turn.error == (
        "the server refused the API key: set OPENAI_API_KEY (or the provider's key variable) "
        f"to a valid key for {server.base_url}"
    )
    page = await _page(await _client_for(alice), debate)
    assert "This turn failed: the server refused the API key: set OPENAI_API_KEY" in page
    assert "sk-wrong-key" not in page and "9876" not in page, "the key never reaches the page"
