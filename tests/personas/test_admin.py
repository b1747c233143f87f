"""The curators' admin: lists, persona page with its critiques, coverage, import and export."""

import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from personas.manifest.io import bundled_manifest_paths, export_library
from personas.manifest.text import dump_manifest
from personas.models import CrossCritique, Library, PairingRule, Persona

from .conftest import db_snapshot, sample_manifest

pytestmark = pytest.mark.django_db

EIGHT_MASTER_PAIRS = (
    "huineng-vs-yinguang",
    "kumarajiva-vs-xuanzang",
    "huineng-vs-zhiyi",
    "huineng-vs-tsongkhapa",
    "ajahn-chah-vs-mahasi-sayadaw",
    "atisha-vs-huineng",
    "ouyi-vs-yinguang",
    "ouyi-vs-tsongkhapa",
)
COVERAGE = reverse("admin:personas_persona_coverage")
IMPORT = reverse("admin:personas_library_import")


@pytest.fixture(autouse=True)
def english(settings):
    """Assertions read English messages; the default language is Chinese (LANGUAGE_CODE)."""
    settings.LANGUAGE_CODE = "en"


def export_url(library):
    return reverse("admin:personas_library_export", args=[library.pk])


# --- lists and change pages ----------------------------------------------------------------------


def test_library_changelist_shows_counts_and_links(admin_client, imported):
    page = admin_client.get(reverse("admin:personas_library_changelist")).content.decode()
    assert "test-duel" in page and IMPORT in page and export_url(imported) in page and COVERAGE in page
    assert '<td class="field-persona_count">3</td>' in page


def test_library_change_page_has_export_button(admin_client, imported):
    page = admin_client.get(reverse("admin:personas_library_change", args=[imported.pk])).content.decode()
    assert export_url(imported) in page


@pytest.mark.parametrize(
    ("query", "expected", "absent"),
    [
        ({"q": "t-alpha"}, ["t-alpha"], ["t-beta"]),
        ({"q": "森林"}, ["t-alpha"], ["t-beta"]),  # a keyword, stored as escaped JSON
        ({"q": "传统乙"}, ["t-beta"], ["t-alpha"]),  # tradition
        ({"kind": "host"}, ["t-host", "o-host"], ["t-alpha"]),
        ({"tier": "master", "library__id__exact": "2"}, ["t-alpha", "t-beta"], ["o-alpha", "t-host"]),
        ({"tradition": "传统甲"}, ["t-alpha", "o-alpha"], ["t-beta"]),
    ],
)
def test_persona_changelist_search_and_filters(admin_client, imported, query, expected, absent):
    response = admin_client.get(reverse("admin:personas_persona_changelist"), query)
    assert response.status_code == 200
    slugs = {p.slug for p in response.context["cl"].result_list}
    assert set(expected) <= slugs and not set(absent) & slugs


def test_persona_change_page_has_the_outgoing_critique_inline(admin_client, imported):
    alpha = Persona.objects.get(slug="t-alpha")
    response = admin_client.get(reverse("admin:personas_persona_change", args=[alpha.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="critiques_given-group"' in page
    assert 'name="critiques_given-TOTAL_FORMS" value="2"' in page
    assert "只重观照，忽视戒律。" in page
    assert "贝塔 (t-beta) → t-alpha: 1" in page  # incoming entries, read-only


def test_autocomplete_for_critique_targets(admin_client, imported):
    response = admin_client.get(
        reverse("admin:autocomplete"),
        {"term": "内观", "app_label": "personas", "model_name": "crosscritique", "field_name": "target"},
    )
    assert response.status_code == 200
    assert {r["text"] for r in response.json()["results"]} >= {"贝塔 (t-beta)", "贝塔 (o-beta)"}


def test_self_critique_in_the_admin_is_a_form_error(admin_client, imported):
    alpha = Persona.objects.get(slug="t-alpha")
    count = CrossCritique.objects.count()
    response = admin_client.post(
        reverse("admin:personas_crosscritique_add"),
        {"source": alpha.pk, "target": alpha.pk, "point": "p", "citation": "c", "order": 0},
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert CrossCritique.objects.count() == count


def test_duplicate_pairing_rule_in_the_admin_is_a_form_error(admin_client, imported):
    alpha, beta = Persona.objects.get(slug="t-alpha"), Persona.objects.get(slug="t-beta")
    response = admin_client.post(
        reverse("admin:personas_pairingrule_add"),
        {
            "library": imported.pk,
            "label": "again",
            "keywords": '["x"]',
            "persona_a": beta.pk,
            "persona_b": alpha.pk,
            "order": 0,
        },
    )
    assert response.status_code == 200
    assert "already has a rule for the pair t-alpha-vs-t-beta" in str(response.context["adminform"].form.errors)
    assert PairingRule.objects.filter(library=imported).count() == 1


@pytest.mark.parametrize(("rounds", "refused"), [("8", False), ("9", True), ("0", True)])
def test_pairing_rule_rounds_stay_within_the_library_maximum(admin_client, imported, rounds, refused):
    alpha, host = Persona.objects.get(slug="t-alpha"), Persona.objects.get(slug="t-host")
    data = {"library": imported.pk, "keywords": "[]", "persona_a": alpha.pk, "persona_b": host.pk, "order": 0}
    response = admin_client.post(reverse("admin:personas_pairingrule_add"), {**data, "default_rounds": rounds})
    assert PairingRule.objects.filter(pair_key="t-alpha-vs-t-host").exists() is not refused
    if refused:
        (error,) = response.context["adminform"].form.errors["default_rounds"]
        assert "from 1 to 8, the library's maximum" in error


def test_pairing_rule_and_template_pages(admin_client, imported):
    rule = PairingRule.objects.get(library=imported)
    page = admin_client.get(reverse("admin:personas_pairingrule_change", args=[rule.pk])).content.decode()
    assert "t-alpha-vs-t-beta" in page
    template = imported.domain_templates.get()
    page = admin_client.get(reverse("admin:personas_domaintemplate_change", args=[template.pk])).content.decode()
    assert "selectfilter" in page.lower()
    for name in ("crosscritique", "pairingrule", "domaintemplate"):
        assert admin_client.get(reverse(f"admin:personas_{name}_changelist")).status_code == 200


# --- coverage ------------------------------------------------------------------------------------


def rows_by_key(response):
    return {row.key: row for row in response.context["rows"]}


def test_coverage_lists_pairing_rule_pairs_in_both_directions(admin_client, imported):
    response = admin_client.get(COVERAGE)
    assert response.status_code == 200
    row = rows_by_key(response)["t-alpha-vs-t-beta"]
    assert (row.a_to_b, row.b_to_a, row.status) == (2, 1, "both")


def test_coverage_highlights_one_sided_pairs(admin_client, imported):
    CrossCritique.objects.filter(source__slug="t-beta").delete()
    response = admin_client.get(COVERAGE, {"library": "test-duel"})
    assert list(rows_by_key(response)) == ["t-alpha-vs-t-beta"]
    assert rows_by_key(response)["t-alpha-vs-t-beta"].status == "one-sided"
    assert 'class="status-one-sided" data-pair="t-alpha-vs-t-beta"' in response.content.decode()


def test_coverage_for_any_two_picked_personas(admin_client, imported):
    response = admin_client.get(COVERAGE, {"a": "t-host", "b": "t-alpha"})
    picked = response.context["picked"]
    assert (picked.key, picked.a_to_b, picked.b_to_a, picked.status) == ("t-alpha-vs-t-host", 0, 0, "none")
    response = admin_client.get(COVERAGE, {"a": "t-beta", "b": "t-alpha"})
    assert response.context["picked"].status == "both"
    assert "戒律是手段。" in response.content.decode()


def test_coverage_reports_unknown_or_equal_picks(admin_client, imported):
    response = admin_client.get(COVERAGE, {"a": "ghost", "b": "t-alpha"})
    assert response.context["picked"] is None
    assert 'Unknown persona "ghost".' in response.context["pick_errors"][0]
    response = admin_client.get(COVERAGE, {"a": "t-alpha", "b": "t-alpha"})
    assert response.context["pick_errors"]


def test_coverage_escapes_persona_text(admin_client, imported):
    CrossCritique.objects.filter(source__slug="t-beta").update(point="<script>alert(1)</script>")
    page = admin_client.get(COVERAGE, {"a": "t-beta", "b": "t-alpha"}).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


@pytest.mark.skipif(not bundled_manifest_paths(), reason="personas/libraries/ has no *.json manifests yet")
def test_coverage_shows_the_eight_master_pairs_covered_both_ways(admin_client):
    call_command("load_libraries", verbosity=0, stdout=None)
    rows = rows_by_key(admin_client.get(COVERAGE))
    for key in EIGHT_MASTER_PAIRS:
        assert key in rows, key
        assert rows[key].a_to_b >= 1 and rows[key].b_to_a >= 1, key
        assert rows[key].status == "both"


# --- import and export ---------------------------------------------------------------------------


def test_import_page_renders(admin_client):
    response = admin_client.get(IMPORT)
    assert response.status_code == 200
    assert 'enctype="multipart/form-data"' in response.content.decode()


def test_import_of_a_bad_file_lists_every_error_with_its_path(admin_client, imported):
    bad = sample_manifest()
    bad["personas"][0]["cross_critique"][1]["target"] = "t-betta"
    bad["personas"][2]["cognitive_frame"] = "本次辩题是<b>什么</b>"
    before = db_snapshot()
    upload = SimpleUploadedFile("bad.json", dump_manifest(bad).encode(), content_type="application/json")
    response = admin_client.post(IMPORT, {"file": upload, "replace": "on"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "<code>personas[0].cross_critique[1].target</code>" in page
    assert "unknown persona &quot;t-betta&quot;" in page
    assert "<code>personas[2].cognitive_frame</code>" in page
    assert [e.path for e in response.context["manifest_errors"]] == [
        "personas[0].cross_critique[1].target",
        "personas[2].cognitive_frame",
    ]
    assert db_snapshot() == before


def test_import_of_malformed_pasted_text(admin_client, imported):
    before = db_snapshot()
    response = admin_client.post(IMPORT, {"text": '{"agora_manifest": 1,,}'})
    assert "malformed JSON at line 1 column 22" in response.content.decode()
    assert db_snapshot() == before


def test_import_needs_a_file_or_text(admin_client):
    response = admin_client.post(IMPORT, {})
    assert response.status_code == 200
    assert response.context["form"].errors


def test_import_of_a_good_file_redirects_to_the_library(admin_client):
    upload = SimpleUploadedFile("ok.json", dump_manifest(sample_manifest()).encode())
    response = admin_client.post(IMPORT, {"file": upload, "replace": "on"}, follow=True)
    library = Library.objects.get(slug="test-duel")
    assert response.redirect_chain[-1][0] == reverse("admin:personas_library_change", args=[library.pk])
    page = response.content.decode()
    assert "library &quot;test-duel&quot; created" in page.lower()


def test_export_download(admin_client, imported):
    response = admin_client.get(export_url(imported))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="test-duel.json"'
    assert response.content.decode() == dump_manifest(export_library(imported))


def test_export_action(admin_client, imported):
    response = admin_client.post(
        reverse("admin:personas_library_changelist"),
        {"action": "export_selected", "_selected_action": [imported.pk]},
    )
    assert response["Content-Disposition"] == 'attachment; filename="test-duel.json"'


def test_admin_round_trip_through_download_and_upload(admin_client, imported):
    text = admin_client.get(export_url(imported)).content
    Library.objects.filter(slug="test-duel").delete()
    admin_client.post(IMPORT, {"file": SimpleUploadedFile("x.json", text), "replace": "on"})
    # Identical but for where the personas came from: an import is recorded external-import.
    imported_text = text.replace(b'"source": "bundled"', b'"source": "external-import"')
    assert imported_text != text
    assert admin_client.get(export_url(Library.objects.get(slug="test-duel"))).content == imported_text


@pytest.mark.parametrize("url", [COVERAGE, IMPORT])
def test_views_are_staff_only(client, url):
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_export_is_staff_only(client, imported):
    User.objects.create_user("plain", password="pw-1234-xyz")
    client.login(username="plain", password="pw-1234-xyz")
    assert client.get(export_url(imported)).status_code == 302


def persona_post_data(persona: Persona, **changes) -> dict:
    data = {
        "library": persona.library_id,
        "slug": persona.slug,
        "name": persona.name,
        "kind": persona.kind,
        "tier": persona.tier,
        "role": persona.role,
        "tradition": persona.tradition,
        "keywords": json.dumps(persona.keywords),
        "description": persona.description,
        "description_en": persona.description_en,
        **{name: getattr(persona, name) for name in Persona.TEXT_FIELDS},
        "preferred_model": "",
        "schema_type": "",
        "density_score": "",
        "source": persona.source,
        "critiques_given-TOTAL_FORMS": "0",
        "critiques_given-INITIAL_FORMS": "0",
        "critiques_given-MIN_NUM_FORMS": "0",
        "critiques_given-MAX_NUM_FORMS": "1000",
    }
    data.update(changes)
    return data


def test_persona_edit_with_a_new_outgoing_critique_saves(admin_client, imported):
    host = Persona.objects.get(slug="t-host")
    alpha = Persona.objects.get(slug="t-alpha")
    data = persona_post_data(
        host,
        **{
            "critiques_given-TOTAL_FORMS": "1",
            "critiques_given-0-target": alpha.pk,
            "critiques_given-0-point": "新的批评",
            "critiques_given-0-citation": "《某书》",
            "critiques_given-0-order": "0",
        },
    )
    response = admin_client.post(reverse("admin:personas_persona_change", args=[host.pk]), data)
    assert response.status_code == 302, response.context["errors"] if response.context else response
    assert CrossCritique.objects.filter(source=host, target=alpha, point="新的批评").exists()


def test_persona_edit_applies_the_purity_rule(admin_client, imported):
    alpha = Persona.objects.get(slug="t-alpha")
    data = persona_post_data(alpha, cognitive_frame="本场议题：要不要出家")
    response = admin_client.post(reverse("admin:personas_persona_change", args=[alpha.pk]), data)
    assert response.status_code == 200
    assert "本场议题" in str(response.context["adminform"].form.errors["cognitive_frame"])
    assert Persona.objects.get(pk=alpha.pk).cognitive_frame == "以戒为师。"


def test_persona_edit_keeps_hosts_procedural(admin_client, imported):
    host = Persona.objects.get(slug="t-host")
    data = persona_post_data(host, tier="master", veto_right="on", density_score="11")
    response = admin_client.post(reverse("admin:personas_persona_change", args=[host.pk]), data)
    errors = response.context["adminform"].form.errors
    assert errors["tier"] == ["A host or moderator has no tier."]
    assert errors["veto_right"] == ["A host or moderator has no veto right."]
    assert errors["density_score"] == ["Leave empty, or use -1 or a number from 0 to 10."]
    assert Persona.objects.get(pk=host.pk).tier == ""
