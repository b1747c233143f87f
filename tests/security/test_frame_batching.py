"""Frame batching never loses, repeats or reorders text: any text, split into deltas any way and
pushed through the sink, reassembles exactly (in the Turn row and in the frames a viewer gets), and
the frames' sequence numbers only go up."""

from __future__ import annotations

import asyncio
import html
import re

import pytest
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agora.text import INVISIBLE, strip_invisible
from debates import frames
from debates.engine import events as ev
from debates.models import Debate, Turn
from debates.sink import DjangoSink
from testkit.fake_openai import tokenize

# The sink reaches the database from its own coroutines (database_sync_to_async), as a live run does.
SINK_DB = pytest.mark.django_db(transaction=True)
DELTA = re.compile(r'<div hx-swap-oob="beforeend:#turn-(\d+)-text">(.*?)</div>', re.DOTALL)
PROPERTY_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# CJK, emoji (a ZWJ sequence and a flag included), newlines, HTML-special characters and any other
# printable text; never the characters `visible` strips on purpose (tested on their own below).
SPECIAL = list("<>&\"'`=/;#\n\r\t ") + ["&amp;", "&lt;", "</div>", "<script>", "中", "文", "辩", "论", "。"]
SPECIAL += ["😀", "👨\u200d👩\u200d👧", "🇨🇳", "é", "e\u0301", "\u00a0"]
ANY = st.characters(blacklist_categories=("Cs",)).filter(lambda c: not INVISIBLE.match(c))
TEXT = st.lists(st.sampled_from(SPECIAL) | ANY, max_size=80).map("".join)


@st.composite
def split(draw, text: str) -> list[str]:
    """Any split of `text` into deltas, empty ones included."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=min(len(text) + 2, 25))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


async def push(text: str, deltas: list[str], pauses: list[float]) -> tuple[str, str, list[dict]]:
    """Drive a real DjangoSink for one turn; (row text after the deltas, after the finish, frames)."""
    debate = await Debate.objects.acreate(question="Batching?", format="duel")
    sink = DjangoSink(debate.pk, frame_interval=0.002)
    sink.layer = InMemoryChannelLayer(capacity=10_000)  # a layer of this loop, large enough to keep every frame
    channel = await sink.layer.new_channel()
    await sink.layer.group_add(sink.groups["zh-hans"], channel)
    await sink.open()
    key = "duel:1:probe"
    await sink.emit(ev.TurnStarted(key, 1, "duel", "probe", "Probe", [{"role": "user", "content": "q"}]))
    for delta, pause in zip(deltas, pauses, strict=False):
        await sink.emit(ev.TextDelta(key, delta))
        if pause:
            await asyncio.sleep(pause)  # sometimes a flush falls between two deltas, sometimes not
    await sink.flush()
    streamed = (await Turn.objects.aget(debate=debate, key=key)).text
    await sink.emit(ev.TurnFinished(key, text, "summary", 1, 1))
    await sink.close()
    finished = (await Turn.objects.aget(debate=debate, key=key)).text
    sent = []
    while True:
        try:
            sent.append(await asyncio.wait_for(sink.layer.receive(channel), timeout=0.01))
        except TimeoutError:
            return streamed, finished, sent


def reassembled(sent: list[dict]) -> str:
    return "".join(html.unescape(m.group(2)) for frame in sent for m in DELTA.finditer(frame["html"]))


@SINK_DB
@PROPERTY_SETTINGS
@given(data=st.data(), text=TEXT)
def test_any_split_reassembles_through_the_sink(data, text):
    deltas = data.draw(split(text), label="deltas")
    pauses = data.draw(st.lists(st.sampled_from([0, 0, 0.003]), min_size=len(deltas), max_size=len(deltas)))
    streamed, finished, sent = async_to_sync(push)(text, deltas, pauses)
    assert streamed == text  # (i) the row holds exactly the streamed text ...
    assert finished == text  # ... and the finished turn too
    assert reassembled(sent) == text  # (ii) the frames' delta fragments, unescaped, are the text
    seqs = [frame["seq"] for frame in sent]
    assert seqs == sorted(set(seqs)) and seqs, seqs  # (iii) strictly increasing


@SINK_DB
def test_invisible_characters_are_stored_but_never_streamed():
    text = "pay\u200bpal \u202egnp.exe\u202c \u2066iso\u2069 \ufeffbom\x00 中文 😀"
    deltas = ["pay\u200b", "pal \u202e", "gnp.exe\u202c \u2066", "iso\u2069 \ufeff", "bom\x00 中文 😀"]
    streamed, _finished, sent = async_to_sync(push)(text, deltas, [0.003] * len(deltas))
    # The record keeps what the model said, less NUL (PostgreSQL text cannot hold it).
    assert streamed == text.replace("\x00", "")
    shown = reassembled(sent)
    assert shown == strip_invisible(text) == "paypal gnp.exe iso bom 中文 😀"
    assert not INVISIBLE.search("".join(frame["html"] for frame in sent))


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_a_delta_fragment_unescapes_to_its_text(text):
    """Pure rendering: one fragment carries its text escaped and nothing else."""
    fragment = frames.delta(7, text)
    matches = DELTA.findall(fragment)
    assert [pk for pk, _ in matches] == ["7"]
    assert html.unescape(matches[0][1]) == text
    assert "<" not in matches[0][1]


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_the_fake_server_tokenizer_splits_without_loss(text):
    assert "".join(tokenize(text)) == text
