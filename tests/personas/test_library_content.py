"""Content checks for the bundled persona libraries (personas/libraries/*.json).

These tests read the manifests as plain JSON, no database. They pin the shape the seeds ask for
(PROTOCOLS.md) and hold the text to the purity rule of docs/manifest.md, through the importer's own
check (personas/purity.py).
"""

import json
import re
from pathlib import Path

import pytest

from personas.purity import purity_errors, purity_marker

LIBRARIES = Path(__file__).resolve().parents[2] / "personas" / "libraries"
FILES = {
    "buddhist-masters": "buddhist-masters.json",
    "panel": "panel.json",
    "roundtable": "roundtable.json",
    "moderated": "moderated.json",
}
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
TEXT_FIELDS = (
    "cognitive_frame",
    "knowledge_domain",
    "decision_preferences",
    "adversarial_rules",
    "expression_style",
)
SEED_PAIRS = [
    ("huineng", "yinguang"),
    ("kumarajiva", "xuanzang"),
    ("huineng", "zhiyi"),
    ("tsongkhapa", "huineng"),
    ("ajahn-chah", "mahasi-sayadaw"),
    ("atisha", "huineng"),
    ("ouyi", "yinguang"),
    ("ouyi", "tsongkhapa"),
]
MASTERS = {
    "huineng": "慧能大师",
    "yinguang": "印光大师",
    "kumarajiva": "鸠摩罗什",
    "xuanzang": "玄奘法师",
    "zhiyi": "智顗大师",
    "tsongkhapa": "宗喀巴大师",
    "ajahn-chah": "阿姜查",
    "mahasi-sayadaw": "马哈希尊者",
    "atisha": "阿底峡尊者",
    "ouyi": "蕅益大师",
}
PANEL_ROLES = {
    "osborn": "divergent",
    "hegel": "convergent",
    "bayes": "verifier",
    "feynman": "auditor",
    "debono": "integrator",
}
L1_STANCES = {
    "devil-advocate",
    "optimist",
    "data-evidence",
    "user-advocate",
    "systems-thinker",
    "resource-constraint",
}


def load(slug):
    return json.loads((LIBRARIES / FILES[slug]).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def manifests():
    return {slug: load(slug) for slug in FILES}


def by_slug(manifest):
    return {p["slug"]: p for p in manifest["personas"]}


def all_personas(manifests):
    return [p for m in manifests.values() for p in m["personas"]]


@pytest.mark.parametrize("slug", sorted(FILES))
def test_manifest_parses_with_required_fields(slug):
    manifest = load(slug)
    assert manifest["agora_manifest"] == 1
    library = manifest["library"]
    assert library["slug"] == slug
    assert library["name"]
    assert library["format"] in {"duel", "panel", "roundtable", "moderated"}
    assert isinstance(library["protocol"], dict)
    assert manifest["personas"]
    for persona in manifest["personas"]:
        assert persona["slug"] and persona["name"]
        assert persona["kind"] in {"debater", "host", "moderator"}
        assert persona["tier"] in {"", "l1", "l2", "l3", "master", "panel"}
        assert isinstance(persona["keywords"], list)
        for field in TEXT_FIELDS:
            assert persona[field].strip(), f"{persona['slug']}.{field} is empty"
        assert persona["description_en"].strip()
        density = persona.get("density_score")
        assert density is None or density == -1 or 0 <= density <= 10


def test_formats_and_protocols(manifests):
    assert manifests["buddhist-masters"]["library"]["format"] == "duel"
    assert manifests["buddhist-masters"]["library"]["protocol"] == {"default_rounds": 4, "max_rounds": 8}
    assert manifests["panel"]["library"]["format"] == "panel"
    assert manifests["panel"]["library"]["protocol"] == {
        "rounds": 4,
        "token_cap_multipliers": {"light": 4.3, "standard": 4.5, "deep": 5.0},
    }
    assert manifests["roundtable"]["library"]["format"] == "roundtable"
    assert manifests["roundtable"]["library"]["protocol"]["modes"] == {
        "quick": {"roles": [3, 3], "rounds": 1},
        "standard": {"roles": [4, 5], "rounds": 3},
        "deep": {"roles": [5, 7], "rounds": 3},
    }
    assert manifests["moderated"]["library"]["format"] == "moderated"
    assert manifests["moderated"]["library"]["protocol"] == {
        "modes": ["round-robin", "position-based", "free-form"],
        "max_chars": 600,
        "max_chars_range": [200, 2000],  # what a debate may set for itself
        "token_budget": 60000,
        "token_budget_range": [5000, 200000],
        # who sits when a question's keywords pick fewer than two (debates/engine/moderated.py)
        "general_personas": ["charlie-munger", "steve-jobs"],
    }


def test_slugs_match_pattern_and_are_unique_across_libraries(manifests):
    slugs = [p["slug"] for p in all_personas(manifests)]
    for slug in slugs + list(manifests):
        assert SLUG_RE.match(slug), slug
    duplicates = {s for s in slugs if slugs.count(s) > 1}
    assert not duplicates


def test_hosts_and_moderators_hold_no_tier_or_veto(manifests):
    for persona in all_personas(manifests):
        if persona["kind"] != "debater":
            assert persona["tier"] == ""
            assert persona["veto_right"] is False


def test_ten_masters_with_traditions(manifests):
    masters = by_slug(manifests["buddhist-masters"])
    assert {slug: p["name"] for slug, p in masters.items()} == MASTERS
    for persona in masters.values():
        assert persona["kind"] == "debater" and persona["tier"] == "master"
        assert persona["tradition"]
        chinese = [k for k in persona["keywords"] if re.search("[\u4e00-\u9fff]", k)]
        assert 6 <= len(chinese) <= 12
        assert len(persona["keywords"]) - len(chinese) >= 2, "English keywords, so English questions pair too"


def test_seed_pairs_are_different_traditions(manifests):
    masters = by_slug(manifests["buddhist-masters"])
    for a, b in SEED_PAIRS:
        assert masters[a]["tradition"] != masters[b]["tradition"], (a, b)


def test_critiques_cover_every_seed_pair_in_both_directions(manifests):
    masters = by_slug(manifests["buddhist-masters"])
    for a, b in SEED_PAIRS:
        for source, target in ((a, b), (b, a)):
            entries = [c for c in masters[source]["cross_critique"] if c["target"] == target]
            assert entries, f"no critique {source} -> {target}"
    total = sum(len(p["cross_critique"]) for p in masters.values())
    assert total >= 16


def test_every_critique_has_point_citation_and_valid_target(manifests):
    known = {p["slug"] for p in all_personas(manifests)}
    for persona in all_personas(manifests):
        for entry in persona["cross_critique"]:
            assert entry["target"] in known
            assert entry["target"] != persona["slug"]
            assert entry["point"].strip()
            assert entry["citation"].strip()


def test_eight_pairing_rules_from_the_seed_table(manifests):
    manifest = manifests["buddhist-masters"]
    masters = by_slug(manifest)
    rules = manifest["pairing_rules"]
    assert len(rules) == 8
    assert [tuple(r["personas"]) for r in rules] == SEED_PAIRS
    for rule in rules:
        a, b = rule["personas"]
        assert a != b and a in masters and b in masters
        assert rule["label"] and rule["keywords"]
        rounds = rule["default_rounds"]
        assert rounds is None or 1 <= rounds <= manifest["library"]["protocol"]["max_rounds"]
    keys = {"-vs-".join(sorted(r["personas"])) for r in rules}
    assert len(keys) == 8


def test_panel_has_five_roles_and_one_host(manifests):
    personas = manifests["panel"]["personas"]
    debaters = {p["slug"]: p["role"] for p in personas if p["kind"] == "debater"}
    assert debaters == PANEL_ROLES
    assert all(p["tier"] == "panel" for p in personas if p["kind"] == "debater")
    hosts = [p for p in personas if p["kind"] == "host"]
    assert [h["slug"] for h in hosts] == ["cicero"]
    assert len(personas) == 6


def test_roundtable_tiers(manifests):
    personas = manifests["roundtable"]["personas"]
    l1 = {p["slug"]: p for p in personas if p["tier"] == "l1"}
    assert set(l1) == L1_STANCES
    for slug, persona in l1.items():
        assert persona["role"] == slug
        assert persona["veto_right"] is (slug == "devil-advocate")
    assert "失败场景" in l1["devil-advocate"]["adversarial_rules"]
    l2 = [p for p in personas if p["tier"] == "l2"]
    assert len(l2) >= 6
    l2_slugs = {p["slug"] for p in l2}
    assert {"ai-product-manager", "llm-architect", "rag-specialist", "growth-pm"} <= l2_slugs
    l3 = [p for p in personas if p["tier"] == "l3"]
    assert len(l3) == 2
    assert all(p["source"] == "bundled" for p in l3)


def test_roundtable_templates_reference_existing_roles(manifests):
    manifest = manifests["roundtable"]
    personas = by_slug(manifest)
    templates = manifest["domain_templates"]
    assert len(templates) >= 5
    assert len({t["slug"] for t in templates}) == len(templates)
    for template in templates:
        assert SLUG_RE.match(template["slug"]) and template["name"] and template["keywords"]
        assert any(re.search(r"[\u4e00-\u9fff]", k) for k in template["keywords"]), template["slug"]
        assert any(re.fullmatch(r"[A-Za-z][A-Za-z ]*", k) for k in template["keywords"]), template["slug"]
        roles = template["roles"]
        assert len(roles) == 5 and len(set(roles)) == 5
        assert all(r in personas for r in roles), template["slug"]
        tiers = [personas[r]["tier"] for r in roles]
        assert tiers.count("l1") == 2 and tiers.count("l2") == 3, template["slug"]


def test_moderated_participants_and_moderator(manifests):
    personas = manifests["moderated"]["personas"]
    debaters = [p for p in personas if p["kind"] == "debater"]
    assert len(debaters) >= 4
    for persona in debaters:
        assert persona["schema_type"]
        assert persona["density_score"] is not None
    scores = [p["density_score"] for p in debaters]
    assert any(0 <= s < 6 or s == -1 for s in scores), "no low-density persona to show the warning"
    assert sum(6 <= s <= 10 for s in scores) > len(scores) / 2
    moderators = [p for p in personas if p["kind"] == "moderator"]
    assert len(moderators) == 1
    assert "若被迫选，在所有发言的基础上最小损失的选项是" in moderators[0]["adversarial_rules"]


def test_no_persona_text_names_a_debate_question(manifests):
    for persona in all_personas(manifests):
        assert purity_errors(persona) == {}, persona["slug"]
        # The importer leaves critiques alone, but the bundled ones hold to the rule too.
        for entry in persona["cross_critique"]:
            assert purity_marker(entry["point"]) is None, f"{persona['slug']} -> {entry['target']}"


def test_the_purity_check_reads_manifest_entries():
    """The check above is not vacuous: a manifest entry that breaks the rule is caught, field by field."""
    persona = {"cognitive_frame": "本场议题：要不要出家", "keywords": ["戒律", "Today’s topic"], "name": "topic: x"}
    errors = purity_errors(persona)
    assert set(errors) == {"cognitive_frame", "keywords"}
    assert errors["keywords"][0].params == {"marker": "today's topic", "item": 1}
