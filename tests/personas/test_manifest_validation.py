"""A manifest with any defect is refused as a whole, each defect named by its manifest path."""

import json

import pytest

from personas.manifest.errors import ROOT, ManifestInvalid
from personas.manifest.io import import_manifest
from personas.manifest.text import MAX_MANIFEST_BYTES, parse_manifest
from personas.manifest.validation import validate_manifest
from personas.models import Library
from personas.purity import MARKERS as PURITY_MARKERS

from .conftest import db_snapshot, sample_manifest

pytestmark = pytest.mark.django_db

PURITY_MESSAGE = 'Reads like a debate question ("本场议题"); persona text describes who the persona is.'


def errors_of(data) -> dict[str, str]:
    return {e.path: e.message for e in validate_manifest(data)}


def refuse(text_or_data, imported_snapshot):
    """Import must raise ManifestInvalid and leave every row exactly as it was."""
    with pytest.raises(ManifestInvalid) as caught:
        data = parse_manifest(text_or_data) if isinstance(text_or_data, str) else text_or_data
        import_manifest(data)
    assert db_snapshot() == imported_snapshot
    return {e.path: e.message for e in caught.value.errors}


@pytest.fixture
def changed(manifest):
    """The sample library with edits that would show if any write leaked through."""
    manifest["library"]["name"] = "Renamed"
    manifest["personas"][0]["description"] = "changed"
    manifest["personas"].append({"slug": "t-new", "name": "New", "kind": "debater"})
    return manifest


@pytest.fixture
def before(imported):
    return db_snapshot()


# --- the defects the issue lists --------------------------------------------------------------------


def test_valid_manifest_has_no_errors(manifest):
    assert validate_manifest(manifest) == []


def test_malformed_json_is_refused_with_line_and_column(before):
    text = '{\n  "agora_manifest": 1,\n  "library": {"slug": "test-duel",}\n}'
    errors = refuse(text, before)
    assert list(errors) == [ROOT]
    assert errors[ROOT].startswith("malformed JSON at line 3 column 35")


def test_missing_required_field_is_refused(changed, before):
    del changed["personas"][1]["name"]
    del changed["library"]["format"]
    errors = refuse(changed, before)
    assert errors["personas[1].name"] == "required field is missing"
    assert errors["library.format"] == "required field is missing"


def test_unknown_target_persona_is_refused(changed, before):
    changed["personas"][0]["cross_critique"][1]["target"] = "t-betta"
    errors = refuse(changed, before)
    assert errors == {"personas[0].cross_critique[1].target": 'unknown persona "t-betta"'}


def test_duplicate_slug_within_manifest_is_refused(changed, before):
    changed["personas"][2]["slug"] = "t-alpha"
    errors = refuse(changed, before)
    assert errors["personas[2].slug"] == 'duplicate persona slug "t-alpha" (also at personas[0].slug)'


def test_slug_of_another_library_is_refused(changed, before):
    changed["personas"][3]["slug"] = "o-beta"
    errors = refuse(changed, before)
    assert 'already belongs to library "other-duel"' in errors["personas[3].slug"]


def test_self_critique_is_refused(changed, before):
    changed["personas"][1]["cross_critique"][0]["target"] = "t-beta"
    errors = refuse(changed, before)
    assert errors == {"personas[1].cross_critique[0].target": "a persona cannot critique itself"}


def test_purity_marker_is_refused(changed, before):
    changed["personas"][1]["cognitive_frame"] = "本场议题：念佛还是参禅？"
    errors = refuse(changed, before)
    assert errors == {"personas[1].cognitive_frame": PURITY_MESSAGE}


def test_all_errors_are_reported_not_just_the_first(changed, before):
    changed["personas"][0]["cross_critique"][0]["target"] = "nobody"
    changed["personas"][1]["cross_critique"][0]["target"] = "t-beta"
    changed["personas"][2]["kind"] = "judge"
    changed["personas"][3]["keywords"] = ["ok", 3]
    errors = refuse(changed, before)
    assert set(errors) == {
        "personas[0].cross_critique[0].target",
        "personas[1].cross_critique[0].target",
        "personas[2].kind",
        "personas[3].keywords[1]",
    }


# --- purity --------------------------------------------------------------------------------------


@pytest.mark.parametrize("marker", PURITY_MARKERS)
def test_every_purity_marker_is_caught(manifest, marker):
    manifest["personas"][0]["adversarial_rules"] = f"前文。{marker.upper()} 后文"
    assert "Reads like a debate question" in errors_of(manifest)["personas[0].adversarial_rules"]


@pytest.mark.parametrize(
    "field", ["knowledge_domain", "decision_preferences", "expression_style", "description", "description_en"]
)
def test_purity_applies_to_every_persona_text_field(manifest, field):
    manifest["personas"][1][field] = "The debate question is whether to act."
    assert list(errors_of(manifest)) == [f"personas[1].{field}"]
    assert '("the debate question")' in errors_of(manifest)[f"personas[1].{field}"]


def test_purity_applies_to_keywords_and_curly_apostrophes(manifest):
    manifest["personas"][0]["keywords"] = ["戒律", "Today’s Topic"]
    assert "today's topic" in errors_of(manifest)["personas[0].keywords[1]"]


def test_persona_text_about_topics_in_general_is_fine(manifest):
    manifest["personas"][0]["cognitive_frame"] = "面对任何议题，先问其缘起；topics are judged by practice."
    assert validate_manifest(manifest) == []


# --- types, enums, ranges, references ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "path", "fragment"),
    [
        (lambda m: m.update(agora_manifest=2), "agora_manifest", "unsupported version 2"),
        (lambda m: m.update(agora_manifest=True), "agora_manifest", "unsupported version true"),
        (lambda m: m.update(extra=1), "extra", "unknown field"),
        (lambda m: m.update(personas={}), "personas", "must be a list"),
        (lambda m: m.update(library=[]), "library", "must be an object"),
        (lambda m: m["library"].update(slug="Bad Slug"), "library.slug", "digits and single hyphens"),
        (lambda m: m["library"].update(format="chat"), "library.format", "'chat' is not a valid choice"),
        (lambda m: m["library"].update(name=""), "library.name", "must not be empty"),
        (lambda m: m["library"].update(protocol=[]), "library.protocol", "must be an object"),
        (lambda m: m["library"]["protocol"].update(max_rounds=0), "library.protocol.max_rounds", "1 to"),
        (lambda m: m["library"]["protocol"].update(default_rounds=9), "library.protocol.default_rounds", "1 to 8"),
        (lambda m: m["personas"].append("x"), "personas[3]", "must be an object"),
        (lambda m: m["personas"][0].update(slug="t_alpha"), "personas[0].slug", "digits and single hyphens"),
        (lambda m: m["personas"][0].update(slug=5), "personas[0].slug", "must be a string, got a number"),
        (lambda m: m["personas"][0].update(kind="judge"), "personas[0].kind", "is not a valid choice"),
        (lambda m: m["personas"][0].update(tier="l9"), "personas[0].tier", "is not a valid choice"),
        (lambda m: m["personas"][0].update(source="web"), "personas[0].source", "is not a valid choice"),
        (lambda m: m["personas"][0].update(veto_right="yes"), "personas[0].veto_right", "true or false"),
        (lambda m: m["personas"][0].update(keywords="戒律"), "personas[0].keywords", "list of strings"),
        (lambda m: m["personas"][0].update(keywords=[""]), "personas[0].keywords[0]", "must not be empty"),
        (lambda m: m["personas"][0].update(density_score=11), "personas[0].density_score", "-1 or a number from 0"),
        (lambda m: m["personas"][0].update(density_score=-0.5), "personas[0].density_score", "-1 or a number from 0"),
        (lambda m: m["personas"][0].update(density_score="7"), "personas[0].density_score", "-1 or a number from 0"),
        (lambda m: m["personas"][0].update(density_score=True), "personas[0].density_score", "-1 or a number from 0"),
        (lambda m: m["personas"][0].update(name="x" * 121), "personas[0].name", "at most 120 characters (it has 121)"),
        (lambda m: m["personas"][0].update(tradition="x" * 81), "personas[0].tradition", "at most 80 characters"),
        (lambda m: m["personas"][0].update(description="\x00"), "personas[0].description", "NUL"),
        (lambda m: m["personas"][0].update(cognitve_frame="x"), "personas[0].cognitve_frame", "unknown field"),
        (lambda m: m["personas"][2].update(tier="master"), "personas[2].tier", "has no tier"),
        (lambda m: m["personas"][2].update(veto_right=True), "personas[2].veto_right", "no veto right"),
        (lambda m: m["personas"][0].update(cross_critique={}), "personas[0].cross_critique", "must be a list"),
        (
            lambda m: m["personas"][0]["cross_critique"][0].pop("citation"),
            "personas[0].cross_critique[0].citation",
            "required field is missing",
        ),
        (
            lambda m: m["personas"][0]["cross_critique"][0].update(point="  "),
            "personas[0].cross_critique[0].point",
            "must not be empty",
        ),
        (
            lambda m: m["personas"][0]["cross_critique"][0].update(citation="c" * 301),
            "personas[0].cross_critique[0].citation",
            "at most 300 characters",
        ),
        (lambda m: m["pairing_rules"][0].update(personas=["t-alpha"]), "pairing_rules[0].personas", "exactly two"),
        (
            lambda m: m["pairing_rules"][0].update(personas=["t-alpha", "t-alpha"]),
            "pairing_rules[0].personas",
            "two different personas",
        ),
        (
            lambda m: m["pairing_rules"][0].update(personas=["t-alpha", "ghost"]),
            "pairing_rules[0].personas[1]",
            'unknown persona "ghost"',
        ),
        (lambda m: m["pairing_rules"][0].update(default_rounds=9), "pairing_rules[0].default_rounds", "1 to 8"),
        (lambda m: m["pairing_rules"][0].update(default_rounds=0), "pairing_rules[0].default_rounds", "1 to 8"),
        (
            lambda m: m["pairing_rules"].append(dict(m["pairing_rules"][0], personas=["t-beta", "t-alpha"])),
            "pairing_rules[1].personas",
            "same pair (t-alpha-vs-t-beta) as pairing_rules[0]",
        ),
        (
            lambda m: m["domain_templates"][0].update(roles=["t-alpha", "nobody"]),
            "domain_templates[0].roles[1]",
            'unknown persona "nobody"',
        ),
        (
            lambda m: m["domain_templates"][0].update(roles=["t-alpha", "t-alpha"]),
            "domain_templates[0].roles[1]",
            "listed twice",
        ),
        (
            lambda m: m["domain_templates"].append(dict(m["domain_templates"][0])),
            "domain_templates[1].slug",
            "duplicate template slug",
        ),
    ],
)
def test_type_and_reference_checks(manifest, edit, path, fragment):
    edit(manifest)
    errors = errors_of(manifest)
    assert path in errors, errors
    assert fragment in errors[path]


def test_library_rounds_bound_pairing_rounds(manifest):
    manifest["library"]["protocol"] = {"default_rounds": 6, "max_rounds": 12}
    manifest["pairing_rules"][0]["default_rounds"] = 12
    assert validate_manifest(manifest) == []


def test_top_level_must_be_an_object():
    assert errors_of([1, 2]) == {ROOT: "must be an object, got a list"}


def test_targets_may_be_personas_already_in_the_database(imported, manifest):
    manifest["library"]["slug"] = "third"
    for persona in manifest["personas"]:
        persona["slug"] = persona["slug"].replace("t-", "x-")
    manifest["personas"][0]["cross_critique"] = [{"target": "o-alpha", "point": "p", "citation": "c"}]
    manifest["pairing_rules"] = [{"personas": ["x-alpha", "o-beta"]}]
    manifest["domain_templates"] = [{"slug": "mixed", "name": "Mixed", "roles": ["o-host", "x-beta"]}]
    assert validate_manifest(manifest) == []
    import_manifest(manifest)
    assert Library.objects.get(slug="third").pairing_rules.get().pair_key == "o-beta-vs-x-alpha"


# --- parsing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "malformed JSON at line 1 column 1"),
        ('{"a": NaN}', "NaN is not valid JSON"),
        ('{"a": Infinity}', "Infinity is not valid JSON"),
        ('{"a": 1, "a": 2}', 'duplicate key "a"'),
        ("[" * 100_000, "malformed JSON"),
    ],
)
def test_parse_errors(text, fragment):
    with pytest.raises(ManifestInvalid) as caught:
        parse_manifest(text)
    (error,) = caught.value.errors
    assert error.path == ROOT
    assert fragment in error.message


def test_parse_refuses_oversized_and_non_utf8_input():
    with pytest.raises(ManifestInvalid, match="the limit is"):
        parse_manifest(b" " * (MAX_MANIFEST_BYTES + 1))
    with pytest.raises(ManifestInvalid, match="not UTF-8"):
        parse_manifest(b'{"a": "\xff"}')


def test_parse_accepts_bytes_with_bom(manifest):
    assert parse_manifest(b"\xef\xbb\xbf" + json.dumps(manifest).encode()) == manifest


def test_lone_surrogate_is_a_validation_error_not_a_crash(before, changed):
    changed["personas"][0]["name"] = parse_manifest('"\\ud800"')
    errors = refuse(changed, before)
    assert errors == {"personas[0].name": "contains an unpaired surrogate"}


def test_sample_fixture_is_valid():
    assert validate_manifest(sample_manifest()) == []
