"""The bundled personas speak the debate's language (issue 48): what Agora itself sends for an
English question, in every format, over the loopback fake OpenAI server, with the bundled
libraries' own personas, is English; a Chinese question's stays Chinese. Measured as the CJK
share of the prompts once the fake model's own words, the question and the personas' names are
taken out (before: 21–33 % CJK in every English format, the persona text Chinese only)."""

from __future__ import annotations

import json
import re

import pytest

from debates.engine.prompts import system_prompt
from debates.engine.spec import CritiqueSpec, DebateSpec, LibrarySpec, SeatSpec
from debates.specs import persona_spec
from personas.manifest.io import bundled_manifest_paths
from personas.models import Persona

from .conftest import options
from .test_panel import UNCAPPED, roomy_baseline

CJK = re.compile("[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")
QUESTIONS = {
    "en": "Should I take a job at a big tech company or join a five-person startup?",
    "zh": "我应该去大型科技公司工作，还是加入一家五人创业公司？",
}
DUEL_QUESTIONS = {
    "en": "Chan or Pure Land: which suits a busy lay person today?",
    "zh": "参禅与念佛，哪一条路更适合今天的在家人？",
}


def bundled() -> tuple[dict[str, Persona], list[CritiqueSpec]]:
    """Every bundled persona as its row would be loaded (unsaved: no database), and the critiques."""
    columns = {f.name for f in Persona._meta.concrete_fields if not f.is_relation} - {"id"}
    personas, critiques = {}, []
    for path in bundled_manifest_paths():
        for entry in json.loads(path.read_text("utf-8"))["personas"]:
            personas[entry["slug"]] = Persona(**{k: v for k, v in entry.items() if k in columns})
            critiques += [
                CritiqueSpec(entry["slug"], c["target"], c["point"], c["citation"], c["point_en"], c["citation_en"])
                for c in entry.get("cross_critique", [])
            ]
    return personas, critiques


def spec(fmt: str, lang: str) -> DebateSpec:
    rows, critiques = bundled()
    people = {slug: persona_spec(p) for slug, p in rows.items()}
    seated, library, values = {
        "duel": (["huineng", "yinguang"], LibrarySpec(critiques=critiques), {"rounds": 2}),
        "panel": (
            ["osborn", "hegel", "bayes", "feynman", "debono"],
            LibrarySpec(host=people["cicero"]),
            {"token_budget": UNCAPPED},
        ),
        "roundtable": (
            ["devil-advocate", "optimist", "career-coach", "venture-investor"],
            LibrarySpec(),
            {"no_interrupt": True},
        ),
        "moderated": (["steve-jobs", "charlie-munger"], LibrarySpec(host=people["moderator"]), {"rounds": 1}),
    }[fmt]
    library.pool = [people[s] for s in seated]
    question = (DUEL_QUESTIONS if fmt == "duel" else QUESTIONS)[lang]
    return DebateSpec(
        question=question,
        format=fmt,
        seats=[SeatSpec(people[s]) for s in seated],
        library=library,
        options=options(fmt, **values),
    )


def agoras_own_words(run, made: DebateSpec) -> str:
    """Everything the requests carried, less the fake model's replies, the question and the names."""
    said = "\n".join(str(m.get("content", "")) for r in run.requests for m in r.body["messages"])
    replies = ["".join(r.tokens) for r in run.requests]
    # A reply comes back whole, or line by line (a summary, a position), into later prompts.
    pieces = [*replies, *(line.strip() for reply in replies for line in reply.splitlines())]
    people = [*made.seats, *[SeatSpec(made.library.host)] * bool(made.library.host)]
    pieces += [made.question, *(s.persona.name for s in people), *(s.persona.name_en for s in people)]
    for piece in sorted({p for p in pieces if len(p) > 1}, key=len, reverse=True):
        said = said.replace(piece, "")
    return said


def cjk_share(text: str) -> float:
    letters = re.sub(r"\s", "", text)
    return len(CJK.findall(letters)) / max(len(letters), 1)


@pytest.mark.parametrize("fmt", ["duel", "panel", "roundtable", "moderated"])
async def test_an_english_debate_sends_its_bundled_personas_in_english(harness, fmt):
    made = spec(fmt, "en")
    run = await harness.run(made, roomy_baseline if fmt == "panel" else None)

    assert len(run.requests) >= 3
    own = agoras_own_words(run, made)
    share = cjk_share(own)
    print(f"\n{fmt}: English debate, CJK share of Agora's own words: {share:.1%} of {len(own)} characters")
    assert share < 0.01, (fmt, f"{share:.1%}", sorted(set(CJK.findall(own)))[:40])
    system = next(m["content"] for m in run.requests[-1].body["messages"] if m["role"] == "system")
    assert "exists only in Chinese" not in system  # every bundled persona has its English text


@pytest.mark.parametrize("fmt", ["duel", "panel", "roundtable", "moderated"])
async def test_a_chinese_debate_sends_its_bundled_personas_in_chinese(harness, fmt):
    made = spec(fmt, "zh")
    run = await harness.run(made, roomy_baseline if fmt == "panel" else None)

    assert len(run.requests) >= 3
    own = agoras_own_words(run, made)
    share = cjk_share(own)
    print(f"\n{fmt}: Chinese debate, CJK share of Agora's own words: {share:.1%} of {len(own)} characters")
    assert share > 0.5, (fmt, f"{share:.1%}")
    speaker = made.seats[0].persona
    sent = "\n".join(m["content"] for r in run.requests for m in r.body["messages"] if m["role"] == "system")
    assert speaker.text in sent and "## 认知框架" in sent and "Cognitive frame" not in sent


def test_a_persona_written_in_one_language_is_sent_as_written_and_the_prompt_says_so():
    chinese_only = Persona(slug="mine", name="我的人格", cognitive_frame="先看最坏的情况。")
    made = persona_spec(chinese_only)
    english = system_prompt(made, lang="en")
    assert "先看最坏的情况。" in english and "exists only in Chinese" in english
    assert "## Cognitive frame" in english  # the heading is the debate's
    chinese = system_prompt(made, lang="zh")
    assert "先看最坏的情况。" in chinese and "只有英文版本" not in chinese and "exists only" not in chinese
    english_only = persona_spec(Persona(slug="mine-en", name="Mine", cognitive_frame_en="Worst case first."))
    assert "Worst case first." in system_prompt(english_only, lang="zh")
    assert "只有英文版本" in system_prompt(english_only, lang="zh")
    assert "exists only" not in system_prompt(english_only, lang="en")


def test_every_bundled_persona_has_all_its_parts_in_english():
    rows, critiques = bundled()
    for slug, p in rows.items():
        for field in Persona.TEXT_FIELDS:
            english = getattr(p, f"{field}_en")
            assert english.strip() and not CJK.search(english), (slug, field)
    assert critiques
    for c in critiques:
        assert c.point_en and c.citation_en and not CJK.search(c.point_en + c.citation_en), (c.source, c.target)
