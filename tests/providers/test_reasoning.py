"""Reasoning models (issue 26): the request shape per family, what a 400 teaches (once), thinking
kept apart from the answer (reasoning_content, reasoning, `<think>` tags in any chunking), its
tokens, and the odd chunks real servers send. The client runs against the fake server over real
loopback HTTP; the splitter is also checked alone, for every chunking hypothesis can find."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from debates.engine.turns import ReplyMeter, reply_ceiling
from debates.providers.base import ConnectionLost, ProviderError, estimate_tokens
from debates.providers.openai_compat import ThinkingExhausted
from debates.providers.reasoning import (
    HEADROOM_FACTOR,
    is_openai_reasoning,
    is_reasoning_model,
    with_headroom,
)
from debates.providers.thinking import ThinkSplitter, split_thinking
from testkit.fake_openai import FakeOpenAIServer, Fault, Reply, refusal, tokenize

MESSAGES = [
    {"role": "system", "content": "You are Socrates."},
    {"role": "user", "content": "Is virtue teachable?"},
]
THINKING = "The user asks about virtue. Meno asked the same; recall the slave boy and the square."
ANSWER = "Virtue, I think, is a kind of knowledge, and so it can be taught."


async def run(client, *, thinking: list[str] | None = None, **options) -> tuple[str, object]:
    """The answer as streamed, and the completion; thinking pieces go to `thinking`."""
    options.setdefault("max_tokens", 200)
    on_thinking = thinking.append if thinking is not None else None
    stream = client.stream(MESSAGES, on_thinking=on_thinking, **options)
    deltas = [delta async for delta in stream]
    return "".join(deltas), stream.completion


def sent(server) -> list[dict]:
    return [r.body for r in server.chat_requests]


# -- which models think ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        "o1",
        "o3-mini",
        "o4-mini",
        "o4-mini-2025-04-16",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "openai/o3",
        "deepseek-reasoner",
        "qwq:32b",
        "QwQ-32B-Preview",
        "deepseek-r1:14b",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "DeepSeek-R1-0528",
        "qwen3-235b-a22b-thinking-2507",
        "gemini-2.0-flash-thinking-exp",
        "anthropic/claude-3.7-sonnet:thinking",
    ],
)
def test_reasoning_families_are_known_by_name(model):
    assert is_reasoning_model(model)


@pytest.mark.parametrize(
    "model",
    [
        "gpt-4o-mini",
        "gpt-4o-mini-2024-07-18",
        "gpt-5-chat-latest",
        "deepseek-chat",
        "llama3.1:8b",
        "qwen2.5-7b-instruct",
        "command-r-plus",
        "o1x",
        "",
    ],
)
def test_other_models_are_not_reasoning_models(model):
    assert not is_reasoning_model(model)


def test_only_openais_reasoning_models_take_its_request_shape():
    assert is_openai_reasoning("o4-mini") and is_openai_reasoning("gpt-5-mini")
    assert not is_openai_reasoning("deepseek-reasoner") and not is_openai_reasoning("deepseek-r1:14b")
    assert with_headroom(500) >= HEADROOM_FACTOR * 500


# -- the splitter --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "implicit", "truncated", "thinking", "answer"),
    [
        ("<think>hmm</think>\n\nAnswer.", False, False, "hmm", "Answer."),
        ("\n  <think>hmm</think>Answer.", False, False, "hmm", "Answer."),
        ("<think>still thinking when the tokens ran out", False, True, "still thinking when the tokens ran out", ""),
        ("<think>unclosed at the end", False, False, "unclosed at the end", ""),
        ("Plain answer, no thinking.", False, False, "", "Plain answer, no thinking."),
        ("  Indented answer.", False, False, "", "  Indented answer."),
        ("An answer about <think> tags.", False, False, "", "An answer about <think> tags."),
        ("<b>bold</b> answer", False, False, "", "<b>bold</b> answer"),
        ("<thi", False, False, "", "<thi"),
        ("the prompt opened it</think>\n\nAnswer.", True, False, "the prompt opened it", "Answer."),
        ("<think>opened anyway</think>Answer.", True, False, "opened anyway", "Answer."),
        ("An answer and nothing else.", True, False, "", "An answer and nothing else."),
        ("thinking cut at the limit", True, True, "thinking cut at the limit", ""),
        ("<think>a</think><think>b</think>Answer.", False, False, "ab", "Answer."),
    ],
)
def test_split_thinking(content, implicit, truncated, thinking, answer):
    assert split_thinking(content, implicit=implicit, truncated=truncated) == (thinking, answer)


def test_a_close_tag_without_an_open_one_is_dropped_and_noticed():
    splitter = ThinkSplitter()
    pieces = splitter.feed("thought that went out as answer</think>\n\nAnswer.") + splitter.close()
    assert "".join(text for _, text in pieces) == "thought that went out as answerAnswer."
    assert splitter.bare_close


def _chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


def _split_streamed(chunks: list[str], implicit: bool = False) -> tuple[str, str]:
    splitter = ThinkSplitter(implicit=implicit)
    pieces = [p for chunk in chunks for p in splitter.feed(chunk)] + splitter.close()
    return "".join(t for k, t in pieces if k), "".join(t for k, t in pieces if not k)


_words = st.text(alphabet=st.sampled_from(list("ab <>/thinkeé思\n")), max_size=40)


@given(
    lead=st.sampled_from(["", " ", "\n\n"]),
    thinking=_words.filter(lambda t: "</think>" not in t),
    gap=st.sampled_from(["", "\n", "\n\n  "]),
    answer=_words.filter(lambda t: not t[:1].isspace() and not t.startswith("<")),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
)
def test_any_chunking_of_tagged_content_splits_alike(lead, thinking, gap, answer, cuts):
    content = f"{lead}<think>{thinking}</think>{gap}{answer}"
    assert _split_streamed(_chunked(content, cuts)) == (thinking, answer)


@given(
    content=st.text(alphabet=st.sampled_from(list("ab <>/thinke\n")), max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    implicit=st.booleans(),
)
def test_any_chunking_of_any_content_splits_as_the_whole(content, cuts, implicit):
    assert _split_streamed(_chunked(content, cuts), implicit) == _split_streamed([content], implicit)


# -- the request shape ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["o4-mini", "gpt-5-mini"])
async def test_openai_reasoning_models_get_their_shape_at_once(make_client, model):
    with FakeOpenAIServer(openai_reasoning=True) as server:
        client = make_client(base_url=server.base_url, model=model, reasoning_effort="low")
        text, completion = await run(client, max_tokens=300, stop=["\nAlice:"], temperature=0.7)

    assert text and completion.finish_reason == "stop"
    [body] = sent(server)  # one request: no 400 paid
    assert body["max_completion_tokens"] == with_headroom(300)
    assert "max_tokens" not in body and "temperature" not in body and "stop" not in body
    assert body["reasoning_effort"] == "low"


async def test_no_reasoning_effort_is_sent_unless_chosen(make_client):
    with FakeOpenAIServer(openai_reasoning=True) as server:
        await run(make_client(base_url=server.base_url, model="o4-mini"))
    assert "reasoning_effort" not in sent(server)[0]


async def test_other_reasoning_families_keep_max_tokens_with_headroom_and_no_stop(server, make_client):
    client = make_client(model="deepseek-reasoner")
    await run(client, max_tokens=300, stop=["\nAlice:"], temperature=0.6)
    [body] = sent(server)
    assert body["max_tokens"] == with_headroom(300) and "max_completion_tokens" not in body
    assert "stop" not in body  # it could match inside the thinking
    assert body["temperature"] == 0.6


async def test_headroom_stays_within_a_known_context_window(server, make_client):
    client = make_client(model="deepseek-r1:8b", context_window=2048)
    await run(client, max_tokens=300)
    limit = sent(server)[0]["max_tokens"]
    assert 300 <= limit < 2048


async def test_chat_models_keep_their_request_as_it_was(server, make_client):
    await run(make_client(model="gpt-4o-mini"), max_tokens=300, stop=["\nAlice:"], temperature=0.7)
    [body] = sent(server)
    assert body["max_tokens"] == 300 and body["stop"] == ["\nAlice:"] and body["temperature"] == 0.7
    assert "max_completion_tokens" not in body and "reasoning_effort" not in body


# -- learnt from a 400, once ----------------------------------------------------------------------


async def test_a_refused_parameter_is_learnt_once_per_client_and_reported(make_client):
    learnt: list[dict] = []
    with FakeOpenAIServer(openai_reasoning=True) as server:
        # A deployment name that says nothing of the model behind it (Azure): learnt, not known.
        client = make_client(base_url=server.base_url, model="prod-deployment", on_learn=learnt.append)
        text, completion = await run(client, max_tokens=300, stop=["\nAlice:"], temperature=0.7)
        assert text and completion.attempts == 3
        assert [r.status for r in server.chat_requests] == [400, 400, 200]
        assert learnt == [
            {"max_tokens": "max_completion_tokens"},
            {"max_tokens": "max_completion_tokens", "temperature": None},
        ]

        await run(client, max_tokens=300, stop=["\nAlice:"], temperature=0.7)  # the next turn
        assert [r.status for r in server.chat_requests] == [400, 400, 200, 200]
        body = sent(server)[-1]

    assert body["max_completion_tokens"] == with_headroom(300)  # it thinks: room for it
    assert "max_tokens" not in body and "temperature" not in body and "stop" not in body
    assert len(learnt) == 2  # nothing new to report


async def test_what_was_learnt_is_used_by_the_next_client_from_its_first_request(make_client):
    with FakeOpenAIServer(openai_reasoning=True) as server:
        kept = {"max_tokens": "max_completion_tokens", "temperature": None}
        client = make_client(base_url=server.base_url, model="prod-deployment", learnt=kept)
        await run(client, temperature=0.7)
    assert [r.status for r in server.chat_requests] == [200]


async def test_a_refused_reasoning_effort_is_left_out(make_client):
    learnt: list[dict] = []
    with FakeOpenAIServer(refuses=["reasoning_effort"]) as server:
        client = make_client(
            base_url=server.base_url, model="gpt-4o-mini", reasoning_effort="high", on_learn=learnt.append
        )
        text, _ = await run(client)
    assert text
    assert learnt == [{"reasoning_effort": None}]
    assert "reasoning_effort" not in sent(server)[1]


async def test_a_limit_refused_under_both_names_is_left_out(make_client):
    with FakeOpenAIServer(refuses=["max_tokens", "max_completion_tokens"]) as server:
        client = make_client(base_url=server.base_url, model="gpt-4o-mini")
        text, _ = await run(client)
    assert text
    assert client.learnt == {"max_tokens": "max_completion_tokens", "max_completion_tokens": None}
    assert [r.status for r in server.chat_requests] == [400, 400, 200]


async def test_a_400_that_names_no_parameter_is_not_retried(server, make_client):
    server.inject(Fault.server_error(400, "This model's maximum context length is 8192 tokens."))
    learnt: list[dict] = []
    with pytest.raises(ProviderError, match="HTTP 400"):
        await run(make_client(on_learn=learnt.append))
    assert len(server.chat_requests) == 1 and learnt == []


async def test_openais_refusal_bodies_are_read_as_documented():
    body = refusal("max_tokens")["error"]
    assert body["param"] == "max_tokens" and body["code"] == "unsupported_parameter"
    assert "Use 'max_completion_tokens' instead" in body["message"]
    assert refusal("temperature", 0.7)["error"]["code"] == "unsupported_value"


# -- thinking kept apart -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "model"),
    [
        ("reasoning_content", "deepseek-reasoner"),  # DeepSeek, vLLM/llama.cpp reasoning parsers
        ("reasoning", "deepseek/deepseek-r1"),  # OpenRouter, Ollama
        ("tags", "qwen3:8b"),  # <think> in the content, a model not known to think by name
        ("open", "DeepSeek-R1-Distill-Qwen-7B"),  # the prompt opened <think>: only </think> comes
    ],
)
async def test_thinking_goes_apart_never_into_the_answer(make_client, style, model):
    with FakeOpenAIServer(thinking_as=style) as server:
        server.enqueue(Reply(ANSWER, thinking=THINKING))
        pieces: list[str] = []
        text, completion = await run(make_client(base_url=server.base_url, model=model), thinking=pieces)

    assert text == ANSWER == completion.text
    assert "".join(pieces).strip() == THINKING == completion.thinking
    assert "think>" not in text
    assert completion.reasoning_tokens == len(tokenize(THINKING))  # the server's count
    assert completion.completion_tokens > completion.reasoning_tokens  # completion includes thinking


async def test_reasoning_tokens_come_from_the_usage(server, make_client):
    server.enqueue(Reply(ANSWER, thinking=THINKING, reasoning_tokens=321, completion_tokens=400))
    _, completion = await run(make_client(model="deepseek-reasoner"))
    assert completion.reasoning_tokens == 321 and completion.completion_tokens == 400
    assert not completion.usage_estimated


async def test_openais_hidden_thinking_is_counted(make_client):
    with FakeOpenAIServer(openai_reasoning=True, thinking_as="hidden") as server:
        server.enqueue(Reply(ANSWER, thinking=THINKING))
        pieces: list[str] = []
        text, completion = await run(make_client(base_url=server.base_url, model="o4-mini"), thinking=pieces)
    assert text == ANSWER and pieces == [] and completion.thinking == ""
    assert completion.reasoning_tokens == len(tokenize(THINKING))


async def test_without_usage_the_thinking_is_estimated_as_output(make_client):
    with FakeOpenAIServer(send_usage=False) as server:
        server.enqueue(Reply(ANSWER, thinking=THINKING))
        _, completion = await run(make_client(base_url=server.base_url, model="deepseek-reasoner"))
    assert completion.usage_estimated
    assert completion.reasoning_tokens == estimate_tokens(THINKING)
    assert completion.completion_tokens == estimate_tokens(ANSWER) + estimate_tokens(THINKING)


async def test_think_tags_split_across_chunks_on_the_wire(server, make_client):
    chunks = ["\n<thi", "nk>Hmm, ", "le", "t me see.</th", "ink", ">\n", "\nAns", "wer."]
    server.enqueue(Reply(chunks=chunks))
    pieces: list[str] = []
    text, completion = await run(make_client(model="qwen3:8b"), thinking=pieces)
    assert text == "Answer." and completion.thinking == "Hmm, let me see." == "".join(pieces)


async def test_a_model_seen_closing_thinking_it_never_opened_is_held_back_next_time(make_client):
    with FakeOpenAIServer(thinking_as="open") as server:
        server.enqueue(Reply(ANSWER, thinking=THINKING), Reply(ANSWER, thinking=THINKING))
        client = make_client(base_url=server.base_url, model="some-finetune")  # not known to think
        first, _ = await run(client)
        second, completion = await run(client)
    assert "</think>" not in first  # the tag is dropped; the text before it already went out
    assert second == ANSWER and completion.thinking == THINKING


async def test_thinking_never_trips_the_visible_reply_ceiling(server, make_client):
    long_thinking = " ".join(["considering"] * 400)  # far past the ceiling of a 20-token turn
    server.enqueue(Reply("Short answer.", thinking=long_thinking))
    meter = ReplyMeter(reply_ceiling(20))
    stream = make_client(model="deepseek-reasoner").stream(MESSAGES, max_tokens=20)
    assert not any([meter.add(delta) async for delta in stream])
    assert stream.completion.text == "Short answer."


# -- the thinking used up the allowance ------------------------------------------------------------


async def test_thinking_that_eats_the_allowance_says_so(server, make_client):
    server.enqueue(Reply(ANSWER, thinking=THINKING, thinking_as="tags"))
    with pytest.raises(ThinkingExhausted, match="spent the turn's whole token allowance.*on its thinking") as caught:
        await run(make_client(model="qwen3:8b"), max_tokens=5)  # not known to think: no headroom
    assert "empty reply" not in str(caught.value)
    assert len(server.chat_requests) == 1  # the same request would fail alike: not retried


async def test_hidden_thinking_that_eats_the_allowance_says_so(make_client):
    with FakeOpenAIServer(openai_reasoning=True, thinking_as="hidden") as server:
        server.enqueue(Reply(ANSWER, thinking=" ".join(["hmm"] * (with_headroom(5) + 10))))
        with pytest.raises(ThinkingExhausted, match=f"allowance \\({with_headroom(5)} tokens\\)"):
            await run(make_client(base_url=server.base_url, model="o4-mini"), max_tokens=5)


# -- timeouts: thinking is activity ----------------------------------------------------------------


async def test_thinking_ends_the_first_token_wait(server, make_client):
    # The answer's first token comes after 1.8 s of thinking; the first-token limit is 1 s.
    server.enqueue(Reply(ANSWER, thinking=" ".join(["step"] * 12), token_delay=0.15))
    text, _ = await run(make_client(model="deepseek-reasoner", first_token_timeout=1.0, request_timeout=2.0))
    assert text == ANSWER


async def test_thinking_keeps_the_stream_alive(server, make_client):
    # 10 thinking chunks 0.3 s apart: 3 s with no answer text, the silence limit 1 s.
    server.enqueue(Reply(ANSWER, thinking=" ".join(["step"] * 10), token_delay=0.3))
    text, _ = await run(make_client(model="deepseek-reasoner", request_timeout=1.0))
    assert text == ANSWER


# -- a failure after thinking was shown is not replayed ----------------------------------------------


async def test_shown_thinking_is_not_streamed_twice(server, make_client):
    server.inject(Fault.disconnect(after=0))  # after the thinking, before the answer
    server.enqueue(Reply(ANSWER, thinking=THINKING), Reply(ANSWER, thinking=THINKING))
    pieces: list[str] = []
    with pytest.raises(ConnectionLost) as caught:
        await run(make_client(model="deepseek-reasoner"), thinking=pieces)
    assert caught.value.partial_thinking == THINKING == "".join(pieces)
    assert len(server.chat_requests) == 1


async def test_unshown_thinking_is_retried_and_kept_once(server, make_client):
    server.inject(Fault.disconnect(after=0))
    server.enqueue(Reply(ANSWER, thinking=THINKING), Reply(ANSWER, thinking=THINKING))
    text, completion = await run(make_client(model="deepseek-reasoner"))
    assert text == ANSWER and completion.thinking == THINKING and completion.attempts == 2


# -- what real servers send ------------------------------------------------------------------------


async def test_comments_filter_chunks_and_null_content_are_tolerated(make_client):
    with FakeOpenAIServer(sse_comments=True, azure_filters=True, thinking_as="reasoning_content") as server:
        server.enqueue(Reply(ANSWER, thinking=THINKING, prompt_tokens=11, completion_tokens=40))
        text, completion = await run(make_client(base_url=server.base_url, model="deepseek-reasoner"))
    assert text == ANSWER and completion.thinking == THINKING
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 40)


# -- the local model (llama.cpp) -----------------------------------------------------------------

QWEN3_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined and "
    "enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
)
PLAIN_TEMPLATE = "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}{%- endfor %}"


def write_gguf(path, template: str | None) -> None:
    """A GGUF v3 header as llama.cpp writes one: a few scalars, a vocabulary array of strings and
    an array of floats before the chat template (the reader must skip them), no tensors."""
    import struct

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    pairs = [
        string("general.architecture") + struct.pack("<I", 8) + string("qwen3"),
        string("qwen3.context_length") + struct.pack("<II", 4, 40960),
        string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, 3)
        + b"".join(string(t) for t in ("<think>", "hello", "</think>")),
        string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 3) + struct.pack("<3f", 0, 1, 2),
        string("general.flag") + struct.pack("<I?", 7, True),
    ]
    if template is not None:
        pairs.append(string("tokenizer.chat_template") + struct.pack("<I", 8) + string(template))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs))


def test_the_chat_template_is_read_from_the_gguf_header(tmp_path):
    from debates.providers.local.gguf import chat_template, thinks

    write_gguf(tmp_path / "qwen3.gguf", QWEN3_TEMPLATE)
    write_gguf(tmp_path / "plain.gguf", PLAIN_TEMPLATE)
    write_gguf(tmp_path / "none.gguf", None)
    (tmp_path / "junk.gguf").write_bytes(b"GGUF" + b"\xff" * 40)

    assert chat_template(tmp_path / "qwen3.gguf") == QWEN3_TEMPLATE
    assert thinks(tmp_path / "qwen3.gguf")
    assert not thinks(tmp_path / "plain.gguf") and chat_template(tmp_path / "plain.gguf") == PLAIN_TEMPLATE
    assert chat_template(tmp_path / "none.gguf") is None and not thinks(tmp_path / "none.gguf")
    assert chat_template(tmp_path / "junk.gguf") is None and chat_template(tmp_path / "absent.gguf") is None


def test_the_grammar_applies_after_the_thinking():
    from debates.providers.thinking import ANSWER_RULE, grammar_after_thinking

    answer = 'root ::= "root：" part # the root rule\npart ::= [^root]+ | root\n'
    wrapped = grammar_after_thinking(answer)
    assert wrapped.startswith(f"root ::= agora-think? {ANSWER_RULE}\n")
    assert f'{ANSWER_RULE} ::= "root：" part # the root rule' in wrapped  # literals, comments kept
    assert f"part ::= [^root]+ | {ANSWER_RULE}" in wrapped  # a class kept, a reference renamed
    assert wrapped.count("root ::=") == 1


def _think_automaton(text: str) -> bool:
    """Walks THINK_RULES' agora-t0..t7 as llama.cpp would: true when `text` is thinking closed by
    its first `</think>` (the rules read from the grammar text itself, not restated)."""
    import re

    from debates.providers.thinking import THINK_RULES

    rules = {}
    for line in THINK_RULES.splitlines():
        name, _, body = line.partition(" ::= ")
        if re.fullmatch(r"agora-t\d", name):
            rules[name] = [alt.split() for alt in body.split(" | ")]
    state = "agora-t0"
    for n, ch in enumerate(text):
        for alt in rules[state]:
            head = alt[0]
            if head.startswith("[^"):
                matched = ch not in head[2:-1]
            else:
                matched = ch == head.strip('"')
            if matched:
                if len(alt) == 1:
                    return n == len(text) - 1  # the rule ends: `</think>` was just closed
                state = alt[1]
                break
        else:
            return False
    return False


@pytest.mark.parametrize(
    ("thinking", "closes"),
    [
        ("plain thought</think>", True),
        ("a < b and </thin but not closed</think>", True),
        ("<</think>", True),
        ("</think>", True),
        ("never closed", False),
        ("closed early</think> and more", False),
    ],
)
def test_the_thinking_rules_close_at_the_first_close_tag(thinking, closes):
    assert _think_automaton(thinking) is closes


def test_the_local_server_is_started_with_thinking_apart(tmp_path):
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed (run `make local-model`)")
    import xllamacpp

    from debates.providers.local import serve

    params = serve.build_params(serve.parse_args(["--model", "m.gguf", "--port", "1"]))
    assert params.reasoning_format == xllamacpp.common_reasoning_format.COMMON_REASONING_FORMAT_DEEPSEEK


@pytest.mark.parametrize(("template", "thinks"), [(QWEN3_TEMPLATE, True), (PLAIN_TEMPLATE, False)])
async def test_a_thinking_gguf_gets_headroom_and_its_grammar_after_the_thinking(tmp_path, template, thinks):
    import sys
    from pathlib import Path

    from debates.providers.local import LocalModelClient, LocalModelServer

    root = Path(__file__).resolve().parents[2]
    seen: list[dict] = []

    def command(port: int, api_key: str) -> list[str]:  # the fake server stands in for llama.cpp
        code = f"import sys; sys.path.insert(0, {str(root)!r}); from testkit.fake_openai import main; main()"
        return [sys.executable, "-c", code, "--port", str(port), f"--api-key={api_key}"]

    gguf = tmp_path / "model.gguf"
    write_gguf(gguf, template)
    client = LocalModelClient(
        model_path=gguf,
        cache_dir=tmp_path / "cache",
        ctx=8192,
        startup_timeout=20,
        server_options={"command": command, "required_modules": ()},
        env={},
    )
    client.on_learn = seen.append
    try:
        await client.ensure_ready()
        assert client.thinks is thinks
        grammar = 'root ::= "甲" | "乙"\n'
        original = client._client().chat.completions.with_streaming_response.create
        bodies: list[dict] = []

        def spy(**kwargs):
            bodies.append(kwargs["extra_body"])
            return original(**kwargs)

        client._client().chat.completions.with_streaming_response.create = spy
        await run(client, max_tokens=100, stop=["\nB:"], extra={"grammar": grammar})
    finally:
        LocalModelServer.stop_all()

    [body] = bodies
    if thinks:
        assert body["grammar"].startswith("root ::= agora-think? agora-answer")
        assert 'agora-answer ::= "甲" | "乙"' in body["grammar"]
        assert 100 < body["max_tokens"] <= with_headroom(100) and "stop" not in body
    else:
        assert body["grammar"] == grammar and body["max_tokens"] == 100 and body["stop"] == ["\nB:"]


@pytest.mark.localmodel
@pytest.mark.timeout(180)
async def test_llama_cpp_takes_the_wrapped_grammar_and_holds_the_answer_to_it():
    """The real server parses the grammar with the thinking rules in front, and the answer still
    comes out as the answer's rules say (the bundled model does not think: its answer path)."""
    from .test_local_model import require_real_model

    require_real_model()
    from debates.providers.local import LocalModelClient, LocalModelServer
    from debates.providers.thinking import grammar_after_thinking

    client = LocalModelClient(timeout=60, startup_timeout=120)
    try:
        await client.ensure_ready()
        grammar = grammar_after_thinking('root ::= "是" | "否"\n')
        stream = client.stream(
            [{"role": "user", "content": "太阳从东边升起吗？只答是或否。"}],
            max_tokens=8,
            temperature=0,
            extra={"grammar": grammar},
        )
        text = "".join([d async for d in stream])
    finally:
        LocalModelServer.stop_all()
    assert text in ("是", "否")
