"""Import upserts in place; export is canonical; export → import → export is byte-identical."""

import pytest

from personas.manifest import io
from personas.manifest.errors import ManifestInvalid
from personas.manifest.io import export_library, import_manifest, import_manifests, normalize_manifest
from personas.manifest.text import dump_manifest, parse_manifest
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona

from .conftest import db_counts, db_snapshot, sample_manifest

pytestmark = pytest.mark.django_db


def exported_text(slug: str) -> str:
    return dump_manifest(export_library(Library.objects.get(slug=slug)))


def test_minimal_manifest_imports_with_defaults():
    result = import_manifest(
        {"agora_manifest": 1, "library": {"slug": "mini", "name": "Mini", "format": "panel"}, "personas": []}
    )
    assert result.created and result.library.slug == "mini"
    assert export_library(result.library) == {
        "agora_manifest": 1,
        "library": {"slug": "mini", "name": "Mini", "format": "panel", "description": "", "protocol": {}},
        "personas": [],
        "pairing_rules": [],
        "domain_templates": [],
    }


def test_sample_manifest_imports_every_part(manifest):
    result = import_manifest(manifest)
    assert (result.personas_created, result.critiques, result.pairing_rules, result.domain_templates) == (3, 3, 1, 1)
    alpha = Persona.objects.get(slug="t-alpha")
    assert alpha.library == result.library and alpha.keywords == ["戒律", "森林"]
    assert list(alpha.critiques_given.values_list("target__slug", "order")) == [("t-beta", 0), ("t-beta", 1)]
    rule = PairingRule.objects.get()
    assert (rule.pair_key, rule.default_rounds) == ("t-alpha-vs-t-beta", 3)
    assert Persona.objects.get(slug="t-host").source == "external-import"


def test_import_then_export_gives_the_canonical_manifest(manifest):
    import_manifest(manifest)
    assert export_library(Library.objects.get(slug="test-duel")) == normalize_manifest(manifest)


def test_export_import_export_is_byte_identical_in_place(imported):
    first = exported_text("test-duel")
    import_manifest(parse_manifest(first))
    assert exported_text("test-duel") == first


def test_export_import_export_is_byte_identical_on_a_fresh_database(imported):
    first = exported_text("test-duel")
    Library.objects.filter(slug="test-duel").delete()
    import_manifest(parse_manifest(first))
    assert exported_text("test-duel") == first


def test_order_is_kept_for_personas_critiques_rules_and_template_roles(manifest):
    manifest["personas"].reverse()
    manifest["domain_templates"][0]["roles"] = ["t-host", "t-beta", "t-alpha"]
    manifest["pairing_rules"].insert(0, {"personas": ["t-host", "t-alpha"]})
    import_manifest(manifest)
    exported = export_library(Library.objects.get(slug="test-duel"))
    assert [p["slug"] for p in exported["personas"]] == ["t-host", "t-beta", "t-alpha"]
    assert exported["domain_templates"][0]["roles"] == ["t-host", "t-beta", "t-alpha"]
    assert [r["personas"] for r in exported["pairing_rules"]] == [["t-host", "t-alpha"], ["t-alpha", "t-beta"]]
    assert exported == normalize_manifest(manifest)


def test_density_is_a_float_in_canonical_form(manifest):
    # The column is a float: 7 comes back as 7.0, and from then on the text is stable.
    manifest["personas"][1]["density_score"] = 7
    import_manifest(manifest)
    text = exported_text("test-duel")
    assert '"density_score": 7.0,' in text
    assert export_library(Library.objects.get(slug="test-duel")) == normalize_manifest(manifest)
    import_manifest(parse_manifest(text))
    assert exported_text("test-duel") == text


def test_protocol_keeps_its_key_order(manifest):
    manifest["library"]["protocol"] = {"max_rounds": 6, "default_rounds": 2, "extra": {"z": 1, "a": [2]}}
    import_manifest(manifest)
    assert list(export_library(Library.objects.get(slug="test-duel"))["library"]["protocol"]) == [
        "max_rounds",
        "default_rounds",
        "extra",
    ]


def test_reimporting_creates_no_duplicates_and_touches_no_unchanged_persona(imported):
    counts, personas = db_counts(), list(Persona.objects.order_by("pk").values())
    result = import_manifest(sample_manifest())
    assert db_counts() == counts
    assert list(Persona.objects.order_by("pk").values()) == personas  # updated_at included
    assert (result.created, result.personas_created, result.personas_unchanged) == (False, 0, 3)


def test_reimport_updates_in_place_and_removes_what_the_manifest_dropped(imported, manifest):
    alpha_pk = Persona.objects.get(slug="t-alpha").pk
    rule_pk = PairingRule.objects.get(library=imported).pk
    manifest["personas"][0]["name"] = "Alpha renamed"
    manifest["personas"][0]["cross_critique"] = manifest["personas"][0]["cross_critique"][:1]
    del manifest["personas"][2]  # the host goes
    manifest["personas"].append({"slug": "t-gamma", "name": "Gamma", "kind": "debater"})
    manifest["domain_templates"] = []
    result = import_manifest(manifest)
    assert (result.personas_created, result.personas_updated, result.personas_removed) == (1, 1, 1)
    alpha = Persona.objects.get(slug="t-alpha")
    assert (alpha.pk, alpha.name) == (alpha_pk, "Alpha renamed")
    assert not Persona.objects.filter(slug="t-host").exists()
    assert CrossCritique.objects.filter(source__library=imported).count() == 2
    assert PairingRule.objects.get(library=imported).pk == rule_pk  # upserted, not recreated
    assert not DomainTemplate.objects.filter(library=imported).exists()
    assert Persona.objects.filter(library__slug="other-duel").count() == 3  # the other library untouched


def test_no_replace_refuses_an_existing_library(imported):
    before = db_snapshot()
    with pytest.raises(ManifestInvalid) as caught:
        import_manifest(sample_manifest(), replace=False)
    assert [e.path for e in caught.value.errors] == ["library.slug"]
    assert db_snapshot() == before


def test_removing_a_persona_another_library_uses_is_refused(imported, manifest):
    other = sample_manifest("third", prefix="x")
    other["personas"][0]["cross_critique"].append({"target": "t-host", "point": "p", "citation": "c"})
    import_manifest(other)
    before = db_snapshot()
    del manifest["personas"][2]
    with pytest.raises(ManifestInvalid) as caught:
        import_manifest(manifest)
    assert [str(e) for e in caught.value.errors] == [
        'personas: persona "t-host" is missing, so it would be removed, but library "third" uses it'
    ]
    assert db_snapshot() == before


def test_batch_import_resolves_references_between_manifests_in_any_order():
    first = sample_manifest("aaa", prefix="a")
    second = sample_manifest("bbb", prefix="b")
    # The first library critiques a persona that only the second one brings.
    first["personas"][0]["cross_critique"].append({"target": "b-beta", "point": "p", "citation": "c"})
    results = import_manifests([first, second])
    assert [r.library.slug for r in results] == ["aaa", "bbb"]
    assert CrossCritique.objects.filter(source__slug="a-alpha", target__slug="b-beta").exists()


def test_batch_import_refuses_the_same_persona_in_two_manifests():
    first, second = sample_manifest("aaa", prefix="a"), sample_manifest("bbb", prefix="a")
    with pytest.raises(ManifestInvalid) as caught:
        import_manifests([first, second])
    assert caught.value.per_manifest[0] == []
    assert "also at personas[0].slug of manifest 1" in str(caught.value.per_manifest[1][0])
    assert not Library.objects.exists()


def test_a_persona_can_move_between_libraries_loaded_together(imported):
    moved_pk = Persona.objects.get(slug="o-host").pk
    other, this = sample_manifest("other-duel", prefix="o"), sample_manifest()
    host = other["personas"].pop(2)
    this["personas"].append(host)
    import_manifests([other, this])
    moved = Persona.objects.get(slug="o-host")
    assert (moved.pk, moved.library.slug) == (moved_pk, "test-duel")


def test_a_row_still_in_use_elsewhere_refuses_the_import(monkeypatch, imported):
    """A future PROTECT foreign key (e.g. a debate seat) must surface as a refusal, not a 500."""
    from django.db.models import ProtectedError

    def protected(_):
        raise ProtectedError("in use", {Persona.objects.get(slug="t-host")})

    monkeypatch.setattr(io, "_write_batch", protected)
    with pytest.raises(ManifestInvalid) as caught:
        import_manifest(sample_manifest())
    assert [e.path for e in caught.value.errors] == ["personas"]
    assert "主持 (t-host)" in caught.value.errors[0].message


def test_an_unforeseen_integrity_error_is_a_refusal(monkeypatch, imported):
    from django.db import IntegrityError

    def broken(_):
        raise IntegrityError("boom")

    monkeypatch.setattr(io, "_write_batch", broken)
    before = db_snapshot()
    with pytest.raises(ManifestInvalid, match="database refused the import: boom"):
        import_manifest(sample_manifest())
    assert db_snapshot() == before
