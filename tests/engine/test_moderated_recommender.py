"""The moderated recommender on the bundled library (personas/libraries/moderated.json, read as
plain JSON): ordinary business questions, typed in English or in Chinese, always get two or more
personas and a stated reason; English questions match English keywords on word boundaries; when
the keywords pick fewer than two, the pair is filled and the suggestion and the debate say why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from debates.engine import registry
from debates.engine.moderated import GENERAL_PERSONAS, keyword_hits, recommend_seating
from debates.engine.spec import DebateSpec, LibrarySpec, PersonaSpec

from .conftest import MODERATOR, debate, manifest, options
from .test_moderated import mod_fake

MANIFEST = Path(__file__).resolve().parents[2] / "personas" / "libraries" / "moderated.json"
FORMAT = registry.get("moderated")

ENGLISH = [
    "Should we raise prices 10% next quarter?",
    "Should our 12-person agency hire a salesperson or a second designer?",
    "Should we expand into Southeast Asia next year?",
    "Should we take venture capital funding?",
    "Should I quit my job to start a company?",
    "Should our team go fully remote?",
    "Should we cut half our product line to focus on the core business?",
    "Is it worth buying a competitor?",
]
CHINESE = [
    "我们公司明年该不该进入东南亚市场？",
    "要不要把产品价格上调10%？",
    "我们这个12人的小公司应该招一个销售还是再招一个设计师？",
    "是否应该接受风投融资？",
    "要不要辞职创业？",
    "公司该不该全员远程办公？",
    "我们要不要砍掉一半的产品线，专注核心业务？",
]
FALLBACK_WORDS = "Choose personas yourself for a closer fit."


def bundled_library() -> LibrarySpec:
    data = json.loads(MANIFEST.read_text(encoding="utf-8"))
    pool = [
        PersonaSpec(
            slug=p["slug"],
            name=p["name"],
            kind=p["kind"],
            keywords=tuple(p["keywords"]),
            description=p["description"],
            schema_type=p["schema_type"],
            density_score=p["density_score"],
        )
        for p in data["personas"]
    ]
    host = next(p for p in pool if p.kind == "moderator")
    return LibrarySpec(pool=[p for p in pool if p.kind == "debater"], host=host, protocol=data["library"]["protocol"])


@pytest.fixture(scope="module")
def library() -> LibrarySpec:
    return bundled_library()


@pytest.mark.parametrize("question", ENGLISH + CHINESE)
def test_an_ordinary_business_question_gets_a_pair_and_a_reason(library, question):
    suggestion = FORMAT.suggest(question, library, FORMAT.Options())
    assert suggestion.refusal is None
    assert len(suggestion.personas) >= 2
    assert len({p.slug for p, _ in suggestion.personas}) == len(suggestion.personas)
    assert all(p.kind == "debater" for p, _ in suggestion.personas)
    # The reason is stated: the keywords each persona matched, or why the pair was filled.
    note = suggestion.note.render()
    assert note.startswith("score ≥ 0.5, keywords matched: ") or note.endswith(FALLBACK_WORDS), note
    # The submit agrees with the box: nothing to refuse.
    assert "personas" not in FORMAT.check(question, [], FORMAT.Options(), library)


def test_english_questions_match_english_keywords(library):
    seats = {q: recommend_seating(q, library).seats for q in ENGLISH}
    hits = {q: {p.slug: h for p, _s, h in picks if h} for q, picks in seats.items()}
    assert hits["Should we raise prices 10% next quarter?"] == {"charlie-munger": ["price"]}
    assert hits["Should our 12-person agency hire a salesperson or a second designer?"] == {
        "charlie-munger": ["salesperson"],
        "steve-jobs": ["design"],
        "confucius": ["hire"],
    }
    assert hits["Should we cut half our product line to focus on the core business?"]["steve-jobs"] == [
        "product",
        "focus",
    ]
    # Most English business questions find a persona by its English keywords.
    assert sum(1 for found in hits.values() if found) >= 6
    # Both languages pick the same voice for the same question.
    assert [p.slug for p, _s, _h in recommend_seating("要不要把产品价格上调10%？", library).seats] == [
        "charlie-munger",
        "steve-jobs",
    ]


def test_latin_keywords_match_whole_words_case_insensitively_with_their_endings():
    assert keyword_hits("Should we RAISE Prices?", ["price", "raise"]) == ["price", "raise"]
    assert keyword_hits("We are hiring two designers", ["hire", "design"]) == ["hire", "design"]
    assert keyword_hits("Our pricing and our costs", ["pricing", "cost"]) == ["pricing", "cost"]
    # Not inside another word.
    assert keyword_hits("a costume for the enterprise pineapple", ["cost", "price", "apple", "AI"]) == []
    assert keyword_hits("Build an apple-pie app", ["app"]) == ["app"]
    # A phrase across spaces or hyphens, and next to Chinese text.
    assert keyword_hits("work life balance", ["work-life"]) == ["work-life"]
    assert keyword_hits("用Apple的做法", ["Apple"]) == ["Apple"]
    assert keyword_hits("我们的mental models", ["mental model"]) == ["mental model"]
    # Chinese keywords anywhere in the question, as before.
    assert keyword_hits("小团队的产品设计", ["产品", "设计", "销售"]) == ["产品", "设计"]


def test_no_match_falls_back_to_the_librarys_general_voices_and_says_so(library):
    recommendation = recommend_seating("What should I cook tonight?", library)
    assert [p.slug for p, _s, _h in recommendation.seats] == library.protocol[GENERAL_PERSONAS]
    assert recommendation.reason.msgid.startswith("No persona's keywords match this question")
    assert str(recommendation.reason) == (
        "No persona's keywords match this question, so two general voices sit: 查理·芒格 and 史蒂夫·乔布斯. "
        "Choose personas yourself for a closer fit."
    )


def test_one_match_is_joined_by_a_general_voice_and_says_which(library):
    recommendation = recommend_seating("Should our team go fully remote?", library)
    assert [p.slug for p, _s, _h in recommendation.seats] == ["confucius", "charlie-munger"]
    assert str(recommendation.reason).startswith(
        "Only 孔子 matches this question's keywords, so 查理·芒格 joins as a general voice."
    )
    # The general voice already matched: the next one joins.
    recommendation = recommend_seating("Should we raise prices 10% next quarter?", library)
    assert [p.slug for p, _s, _h in recommendation.seats] == ["charlie-munger", "steve-jobs"]
    assert "so 史蒂夫·乔布斯 joins as a general voice" in str(recommendation.reason)


def test_a_weak_match_is_preferred_to_a_general_voice(library):
    """庄子 is a sparse manifest (density 4.5): one keyword leaves him under 0.5, yet he fits
    better than a voice that matches nothing."""
    recommendation = recommend_seating("要不要辞职创业？", library)
    assert [(p.slug, h) for p, _s, h in recommendation.seats] == [("steve-jobs", ["创业"]), ("zhuangzi", ["辞职"])]
    assert str(recommendation.reason).startswith(
        "Only 史蒂夫·乔布斯 fits this question well (score ≥ 0.5), so 庄子 joins"
    )


def test_without_general_personas_the_densest_manifests_fill_the_pair():
    pool = [
        manifest("thin", "薄", 3.0, keywords=("x",)),
        manifest("dense", "厚", 9.5, keywords=("y",)),
        manifest("middle", "中", 7.0, keywords=("z",)),
    ]
    recommendation = recommend_seating("天气", LibrarySpec(pool=pool))
    assert [p.slug for p, _s, _h in recommendation.seats] == ["dense", "middle"]
    assert recommendation.reason is not None


def test_matching_pairs_need_no_reason(library):
    recommendation = recommend_seating("要不要把产品价格上调10%？", library)
    assert recommendation.reason is None
    assert str(recommendation.note) == "score ≥ 0.5, keywords matched: 查理·芒格 — 价格; 史蒂夫·乔布斯 — 产品"


def test_a_library_with_fewer_than_two_debaters_is_the_only_refusal():
    lonely = LibrarySpec(pool=[manifest("only", "独一", keywords=("产品",))])
    assert FORMAT.suggest("要不要做新产品？", lonely, FORMAT.Options()).personas == []
    problems = FORMAT.check("要不要做新产品？", [], FORMAT.Options(), lonely)
    assert problems["personas"].msgid.startswith("The moderated library has fewer than two personas")


async def test_the_debate_seats_the_fallback_pair_and_warns_why(library):
    spec = DebateSpec(
        question="Should we expand into Southeast Asia next year?",
        format="moderated",
        seats=[],
        library=LibrarySpec(pool=library.pool, host=MODERATOR, protocol=library.protocol),
        options=options("moderated", rounds=1),
    )
    run = await debate(spec, mod_fake())
    assert run.outcome == "done"
    assert run.keys == ["speech:1:charlie-munger:1", "speech:1:steve-jobs:1", "moderator:verdict"]
    warning = run.warning("recommender_fallback")
    assert warning.text.msgid == FORMAT.suggest(spec.question, library).note.msgid
    assert str(warning.text).endswith(FALLBACK_WORDS) and "查理·芒格" in str(warning.text)


async def test_a_matching_pair_runs_without_the_warning(library):
    spec = DebateSpec(
        question="要不要把产品价格上调10%？",
        format="moderated",
        seats=[],
        library=LibrarySpec(pool=library.pool, host=MODERATOR, protocol=library.protocol),
        options=options("moderated", rounds=1),
    )
    run = await debate(spec, mod_fake())
    assert run.outcome == "done" and "recommender_fallback" not in run.warning_codes
    assert run.keys == ["speech:1:charlie-munger:1", "speech:1:steve-jobs:1", "moderator:verdict"]
