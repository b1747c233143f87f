"""Persona names in both languages: every bundled persona has its English name, manifests carry
it both ways, the admin lists and edits it, a database loaded before the names existed gets them
(the load command and the data migration), and the model names a persona in the reader's language."""

import importlib
import json

import pytest
from django.apps import apps
from django.core.management import call_command
from django.urls import reverse
from django.utils import translation

from personas.manifest.io import bundled_manifest_paths, export_library, import_manifest
from personas.models import Persona

from .conftest import sample_manifest

pytestmark = pytest.mark.django_db

# The established English names of real people; plain role names for roles.
KNOWN = {
    "huineng": "Huineng",
    "yinguang": "Yinguang",
    "steve-jobs": "Steve Jobs",
    "charlie-munger": "Charlie Munger",
    "osborn": "Osborn",
    "devil-advocate": "Devil's advocate",
    "backend-architect": "Backend architect",
    "moderator": "Moderator",
    "cicero": "Cicero",
}


def bundled_personas() -> list[dict]:
    return [p for path in bundled_manifest_paths() for p in json.loads(path.read_text("utf-8"))["personas"]]


def test_every_bundled_persona_has_an_english_name_and_line():
    personas = bundled_personas()
    assert len(personas) == 42
    for p in personas:
        assert p.get("name_en", "").strip(), f"{p['slug']} has no English name"
        assert p.get("description_en", "").strip(), f"{p['slug']} has no English line"
        assert not any("\u3400" <= ch <= "\u9fff" for ch in p["name_en"]), p["slug"]
    names = {p["slug"]: p["name_en"] for p in personas}
    assert {slug: names[slug] for slug in KNOWN} == KNOWN
    assert len(set(names.values())) == len(names), "two personas share an English name"


def test_bundled_files_keep_their_formatting():
    for path in bundled_manifest_paths():
        raw = path.read_text("utf-8")
        assert json.dumps(json.loads(raw), ensure_ascii=False, indent=2) + "\n" == raw, path.name


def test_a_manifest_carries_the_english_name_in_and_out():
    data = sample_manifest()
    data["personas"][0]["name_en"] = "Alpha"
    result = import_manifest(data)
    assert Persona.objects.get(slug="t-alpha").name_en == "Alpha"
    exported = export_library(result.library)
    assert exported["personas"][0]["name_en"] == "Alpha"
    assert exported["personas"][1]["name_en"] == "", "a persona without one exports an empty name"


def test_loading_the_libraries_fills_the_names_of_a_database_loaded_before_them():
    call_command("load_libraries", verbosity=0)
    Persona.objects.update(name_en="")  # as loaded before the libraries had English names
    call_command("load_libraries", verbosity=0)
    assert not Persona.objects.filter(name_en="").exists()
    assert Persona.objects.get(slug="huineng").name_en == "Huineng"


def test_the_data_migration_fills_blank_names_and_keeps_a_curators():
    call_command("load_libraries", verbosity=0)
    Persona.objects.update(name_en="")
    Persona.objects.filter(slug="yinguang").update(name_en="Master Yinguang")  # a curator's own
    migration = importlib.import_module("personas.migrations.0005_bundled_english_names")
    migration.fill(apps, None)
    assert Persona.objects.get(slug="huineng").name_en == "Huineng"
    assert Persona.objects.get(slug="yinguang").name_en == "Master Yinguang"
    assert not Persona.objects.filter(name_en="").exists()


def test_a_persona_is_called_in_the_readers_language():
    call_command("load_libraries", verbosity=0)
    huineng = Persona.objects.get(slug="huineng")
    with translation.override("en"):
        assert huineng.called() == "Huineng"
    with translation.override("zh-hans"):
        assert huineng.called() == "慧能大师"
    assert huineng.called("en") == "Huineng" and huineng.called("zh-hans") == "慧能大师"
    huineng.name_en = ""
    with translation.override("en"):
        assert huineng.called() == "慧能大师", "no English name: the name serves both"


def test_the_admin_lists_and_edits_both_names(admin_client, settings):
    settings.LANGUAGE_CODE = "en"
    call_command("load_libraries", verbosity=0)
    page = admin_client.get(reverse("admin:personas_persona_changelist"), {"q": "huineng"}).content.decode()
    assert "慧能大师" in page and "Huineng" in page
    assert "column-name_en" in page, "a column of English names"
    found = admin_client.get(reverse("admin:personas_persona_changelist"), {"q": "Steve Jobs"}).content.decode()
    assert "steve-jobs" in found, "searched by the English name"
    huineng = Persona.objects.get(slug="huineng")
    change = admin_client.get(reverse("admin:personas_persona_change", args=[huineng.pk])).content.decode()
    assert 'name="name_en"' in change and 'value="Huineng"' in change
