"""The database itself refuses what the manifest validator refuses (belt and braces)."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from personas.models import CrossCritique, Library, PairingRule, Persona, pair_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def library():
    return Library.objects.create(slug="lib", name="Lib", format="duel")


def make_persona(library, slug, **extra):
    return Persona.objects.create(library=library, slug=slug, name=slug.title(), **extra)


def refused(create):
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_self_critique_is_refused(library):
    alpha = make_persona(library, "alpha")
    refused(lambda: CrossCritique.objects.create(source=alpha, target=alpha, point="p", citation="c"))


def test_critique_needs_point_and_citation(library):
    alpha, beta = make_persona(library, "alpha"), make_persona(library, "beta")
    refused(lambda: CrossCritique.objects.create(source=alpha, target=beta, point="", citation="c"))
    refused(lambda: CrossCritique.objects.create(source=alpha, target=beta, point="p", citation=""))
    CrossCritique.objects.create(source=alpha, target=beta, point="p", citation="c")


def test_duplicate_persona_slug_is_refused_even_across_libraries(library):
    other = Library.objects.create(slug="other", name="Other", format="panel")
    make_persona(library, "alpha")
    refused(lambda: make_persona(library, "alpha"))
    refused(lambda: make_persona(other, "alpha"))


def test_duplicate_library_slug_is_refused(library):
    refused(lambda: Library.objects.create(slug="lib", name="Again", format="duel"))


@pytest.mark.parametrize("slug", ["Alpha", "al pha", "alpha-", "-alpha", "al--pha", "al_pha", ""])
def test_bad_slug_format_is_refused(library, slug):
    refused(lambda: make_persona(library, slug))


def test_host_cannot_have_a_tier_or_veto(library):
    refused(lambda: make_persona(library, "host", kind="host", tier="master"))
    refused(lambda: make_persona(library, "mod", kind="moderator", veto_right=True))
    make_persona(library, "host", kind="host")


def test_unknown_kind_tier_and_format_are_refused(library):
    refused(lambda: make_persona(library, "a", kind="judge"))
    refused(lambda: make_persona(library, "b", tier="l9"))
    # Formats are the engine's registry (a new one needs no migration): validation, not the schema.
    with pytest.raises(ValidationError) as caught:
        Library(slug="x", name="X", format="chat").full_clean()
    assert "format" in caught.value.message_dict
    Library(slug="x", name="X", format="panel").full_clean()


@pytest.mark.parametrize("density", [-2, -0.5, 10.5, 11])
def test_density_out_of_range_is_refused(library, density):
    refused(lambda: make_persona(library, "a", density_score=density))


@pytest.mark.parametrize("density", [None, -1, 0, 6, 10])
def test_density_in_range_is_accepted(library, density):
    make_persona(library, "a", density_score=density)


def test_pairing_rule_needs_two_personas_and_one_rule_per_pair(library):
    alpha, beta = make_persona(library, "alpha"), make_persona(library, "beta")
    refused(lambda: PairingRule.objects.create(library=library, persona_a=alpha, persona_b=alpha))
    rule = PairingRule.objects.create(library=library, persona_a=beta, persona_b=alpha)
    assert rule.pair_key == pair_key("alpha", "beta") == "alpha-vs-beta"
    refused(lambda: PairingRule.objects.create(library=library, persona_a=alpha, persona_b=beta))


def test_pair_key_sorts_before_joining():
    # The seed's trap: slugs contain '-', so the key is sorted slugs joined, never split.
    assert pair_key("mahasi-sayadaw", "ajahn-chah") == "ajahn-chah-vs-mahasi-sayadaw"
    assert pair_key("yinguang", "huineng") == "huineng-vs-yinguang"
