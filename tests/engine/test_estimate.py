"""The live estimate of a debate's time left (issue 27 #3): the tokens the turns still to come
will write (the format's plan less the turns started, each at the length this debate's turns have
run so far), over the tokens per second of running time so far. Nothing estimated the time left
before: these fail without `debates.engine.estimate` and `Format.turns_planned`."""

from __future__ import annotations

import pytest

from debates.engine import registry
from debates.engine.estimate import Seen, time_left, tokens_left

DUEL_TOKENS = {"speech": 400, "close": 600}


def duel_plan(rounds: int) -> list[tuple[int, str]]:
    return registry.get("duel").turns_planned(rounds, 2)


def test_each_format_plans_a_speech_per_speaker_per_round_then_its_closing_turn():
    assert duel_plan(2) == [(1, "speech"), (1, "speech"), (2, "speech"), (2, "speech"), (0, "close")]
    assert registry.get("moderated").turns_planned(1, 3) == [(1, "speech")] * 3 + [(0, "verdict")]
    assert registry.get("panel").turns_planned(4, 5)[-1] == (0, "verdict")
    assert registry.get("roundtable").turns_planned(3, 4)[-1] == (0, "host")
    for fmt in registry.all_formats():
        planned = fmt.turns_planned(2, 3)
        assert planned[-1][0] == 0 and planned[-1][1] in fmt.tokens  # a closing turn it has an allowance for
        assert [r for r, _ in planned[:-1]] == [1, 1, 1, 2, 2, 2]


def test_no_rate_before_a_turn_has_finished():
    running = [Seen(1, "a", 120, running=True)]
    estimate = time_left(duel_plan(1), DUEL_TOKENS, running, produced=120, running_seconds=30)
    assert estimate.seconds is None and estimate.rate is None
    assert estimate.tokens_left > 0  # the work is known; only the rate is not


def test_after_a_round_the_rest_at_the_length_its_speeches_ran():
    # Round 1 of 2 done: speeches of 200 and 300 tokens in 50 s of running time: 10 tokens/s.
    seen = [Seen(1, "a", 200), Seen(1, "b", 300)]
    estimate = time_left(duel_plan(2), DUEL_TOKENS, seen, produced=500, running_seconds=50)
    assert estimate.rate == pytest.approx(10.0)
    # Round 2: two speeches at their mean (250); the close, not seen yet, at its allowance times
    # how full the speeches ran (600 × 250/400 = 375): 875 tokens, 87.5 s.
    assert estimate.tokens_left == 875
    assert estimate.seconds == 88


def test_a_running_turn_counts_what_it_has_left_and_the_estimate_goes_down():
    seen = [Seen(1, "a", 200), Seen(1, "b", 300), Seen(2, "a", 0, running=True)]
    start = time_left(duel_plan(2), DUEL_TOKENS, seen, produced=500, running_seconds=50)
    seen[-1] = Seen(2, "a", 100, running=True)  # 10 s later, 100 tokens written
    later = time_left(duel_plan(2), DUEL_TOKENS, seen, produced=600, running_seconds=60)
    assert start.tokens_left == 875 and later.tokens_left == 775  # its 250 less the 100 written
    assert later.seconds < start.seconds
    seen[-1] = Seen(2, "a", 400, running=True)  # past the mean: nothing more counted for it
    assert tokens_left(duel_plan(2), DUEL_TOKENS, seen) == 250 + 375


def test_before_any_speech_finished_the_allowances_count():
    seen = [Seen(0, "host", 50)]  # a preamble turn (the roundtable's suitability check)
    assert tokens_left(duel_plan(1), DUEL_TOKENS, seen) == 400 + 400 + 600


def test_a_turn_written_again_is_one_turn_of_its_round():
    seen = [Seen(1, "a", 200), Seen(1, "a", 200), Seen(1, "b", 200, running=True)]  # a's attempt written again
    assert tokens_left(duel_plan(1), DUEL_TOKENS, seen) == 0 + 300  # b's speech is running: only the close


def test_rounds_left_behind_or_cut_short_are_not_counted():
    # The duel stopped early after round 2 of 3: the close started, round 3 never comes.
    seen = [Seen(1, "a", 200), Seen(1, "b", 200), Seen(2, "a", 200), Seen(2, "b", 200)]
    seen.append(Seen(0, "recorder", 100, running=True, closing=True))
    assert tokens_left(duel_plan(3), DUEL_TOKENS, seen) == 300 - 100
    # In round 3 a round-2 turn missing (a person who passed) is not waited for.
    seen = [Seen(1, "a", 200), Seen(1, "b", 200), Seen(2, "a", 200), Seen(3, "a", 200)]
    assert tokens_left(duel_plan(3), DUEL_TOKENS, seen) == 200 + 300


def test_thinking_tokens_count_in_the_rate_and_in_the_lengths():
    # A reasoning model: each speech 1000 completion tokens (800 of them thinking) for a 400 allowance.
    seen = [Seen(1, "a", 1000), Seen(1, "b", 1000)]
    estimate = time_left(duel_plan(1), DUEL_TOKENS, seen, produced=2000, running_seconds=100)
    assert estimate.rate == pytest.approx(20.0)
    assert estimate.tokens_left == 1500  # the close at 600 × 2.5
    assert estimate.seconds == 75
