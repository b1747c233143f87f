"""The hot path's string-built fragments (debates.fast_frames) are the template partials' output,
byte for byte, for any text and any meter state, in every language."""

from __future__ import annotations

from django.conf import settings
from django.utils import translation
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from debates import fast_frames, frames
from debates.models import Debate

LANGUAGES = [code for code, _name in settings.LANGUAGES]
TEXT = st.text(st.sampled_from(list("<>&\"'中文 \n\u200b\u202eabc😀")) | st.characters(blacklist_categories=("Cs",)))


@hsettings(max_examples=300, deadline=None)
@given(pk=st.integers(1, 10**9), text=TEXT)
def test_delta_is_the_partial(pk, text):
    assert fast_frames.delta(pk, text) == frames.part("delta", turn_pk=pk, text=text)


@hsettings(max_examples=300, deadline=None)
@given(pk=st.integers(1, 10**9), text=TEXT)
def test_thinking_delta_is_the_partial(pk, text):
    assert fast_frames.thinking(pk, text) == frames.thinking_delta(pk, text)


METERS = st.fixed_dictionaries(
    {
        "prompt_tokens": st.integers(0, 10**7),
        "completion_tokens": st.integers(0, 10**7),
        "reasoning_tokens": st.integers(0, 10**7) | st.just(0),
        "tokens_estimated": st.booleans(),
        "token_cap": st.none() | st.integers(1, 10**7),
        "cost": st.floats(0, 1000, allow_nan=False) | st.just(0.0) | st.floats(0, 0.0002),
        "cost_unknown": st.booleans(),
        "options": st.fixed_dictionaries(
            {}, optional={"money_budget": st.none() | st.sampled_from([0, 0.5, 2, 10.25])}
        ),
    }
)


@hsettings(max_examples=300, deadline=None)
@given(
    state=METERS,
    streaming=st.integers(0, 5000),
    thinking=st.integers(0, 5000) | st.just(0),
    language=st.sampled_from(LANGUAGES),
)
def test_meter_is_the_partial(state, streaming, thinking, language):
    debate = Debate(question="q", **state)
    with translation.override(language):
        expected = frames.meter(debate, streaming, thinking)
    assert fast_frames.meter(debate, streaming, language, thinking) == expected
