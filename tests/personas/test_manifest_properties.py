"""Property tests: valid manifests round-trip exactly; mutated ones are refused cleanly or imported."""

import copy
from contextlib import contextmanager

import pytest
from django.db import transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from debates.engine import registry
from personas.manifest.errors import ManifestInvalid
from personas.manifest.io import export_library, import_manifest, normalize_manifest
from personas.manifest.text import dump_manifest, parse_manifest
from personas.manifest.validation import validate_manifest
from personas.models import Library, Persona, pair_key
from personas.purity import MARKERS as PURITY_MARKERS
from personas.purity import purity_marker

from .conftest import db_content, db_snapshot, sample_manifest

pytestmark = pytest.mark.django_db
PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextmanager
def rolled_back():
    """Each example starts from the same database: undo whatever it wrote."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


# --- strategies for valid manifests ------------------------------------------------------------------

SLUG = st.from_regex(r"[a-z0-9]{1,5}(-[a-z0-9]{1,4}){0,2}", fullmatch=True)
CHARS = st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\n\t")


def text(max_size=40, min_size=0):
    strategy = st.text(CHARS, min_size=min_size, max_size=max_size).filter(lambda s: purity_marker(s) is None)
    return strategy.filter(lambda s: s.strip()) if min_size else strategy


DENSITY = st.none() | st.just(-1.0) | st.floats(0, 10, allow_nan=False).map(abs)


@st.composite
def persona(draw, slug: str, others: list[str]) -> dict:
    kind = draw(st.sampled_from(Persona.Kind.values))
    debater = kind == "debater"
    # builds, not fixed_dictionaries: key order matters to the byte-identical comparison.
    critique = st.builds(
        lambda target, point, citation, point_en, citation_en: {
            "target": target,
            "point": point,
            "citation": citation,
            "point_en": point_en,
            "citation_en": citation_en,
        },
        st.sampled_from(others or [""]),
        text(min_size=1),
        text(60, min_size=1),
        text(),
        text(60),
    )
    return {
        "slug": slug,
        "name": draw(text(30, min_size=1)),
        "name_en": draw(text(30)),
        "kind": kind,
        "tier": draw(st.sampled_from(Persona.Tier.values)) if debater else "",
        "role": draw(text(40)),
        "tradition": draw(text(80)),
        "keywords": draw(st.lists(text(10, min_size=1), max_size=3)),
        "description": draw(text()),
        "description_en": draw(text()),
        **{name: draw(text(80)) for name in Persona.TEXT_FIELDS},
        **{name: draw(text(80)) for name in Persona.TEXT_FIELDS_EN},
        "veto_right": draw(st.booleans()) if debater else False,
        "preferred_model": draw(text(20)),
        "schema_type": draw(text(20)),
        "density_score": draw(DENSITY),
        "source": draw(st.sampled_from(Persona.Source.values)),
        "cross_critique": draw(st.lists(critique, max_size=3)) if others else [],
    }


@st.composite
def manifests(draw) -> dict:
    slugs = draw(st.lists(SLUG, max_size=6, unique=True))
    personas = [draw(persona(s, [o for o in slugs if o != s])) for s in slugs]
    pairs = [(a, b) for a in slugs for b in slugs if a != b]
    chosen = draw(st.lists(st.sampled_from(pairs), max_size=3, unique_by=lambda p: pair_key(*p))) if pairs else []
    rules = [
        {
            "label": draw(text(30)),
            "keywords": draw(st.lists(text(10, min_size=1), max_size=2)),
            "personas": list(pair),
            "default_rounds": draw(st.none() | st.integers(1, 8)),
        }
        for pair in chosen
    ]
    templates = [
        {
            "slug": slug,
            "name": draw(text(30, min_size=1)),
            "name_en": draw(text(30)),
            "keywords": draw(st.lists(text(10, min_size=1), max_size=2)),
            "roles": draw(st.permutations(slugs).map(lambda p: p[: draw(st.integers(0, len(p)))])),
        }
        for slug in draw(st.lists(SLUG, max_size=2, unique=True))
    ]
    library = {
        "slug": draw(SLUG),
        "name": draw(text(30, min_size=1)),
        "format": draw(st.sampled_from(registry.names())),
        "description": draw(text()),
        "protocol": draw(st.sampled_from([{}, {"default_rounds": 4, "max_rounds": 8}, {"note": "free-form"}])),
    }
    return {
        "agora_manifest": 1,
        "library": library,
        "personas": personas,
        "pairing_rules": rules,
        "domain_templates": templates,
    }


@PROPERTY_SETTINGS
@given(manifests())
def test_any_valid_manifest_imports_and_exports_back_to_itself(data):
    assert validate_manifest(data) == []
    with rolled_back():
        import_manifest(copy.deepcopy(data))
        exported = export_library(Library.objects.get(slug=data["library"]["slug"]))
        assert exported == data
        assert dump_manifest(exported) == dump_manifest(data)
        # And a second import of the export changes nothing in the text.
        import_manifest(parse_manifest(dump_manifest(exported)))
        assert dump_manifest(export_library(Library.objects.get(slug=data["library"]["slug"]))) == dump_manifest(data)


# --- mutations -------------------------------------------------------------------------------------

JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-3, 12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text(12)
    | st.sampled_from(["t-alpha", "t-beta", "t-host", "o-alpha", "ghost", "Bad Slug", "", "host", "l9"])
    | st.sampled_from([f"x {m} y" for m in PURITY_MARKERS])
)
JSON_VALUE = st.recursive(
    JSON_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text(8), inner, max_size=3), max_leaves=6
)


def node_paths(value, prefix=()):
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from node_paths(child, (*prefix, key))


@st.composite
def mutated_manifest(draw):
    data = sample_manifest()
    data["library"]["name"] = "mutated"  # so an accepted import is a visible change
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(node_paths(data))))
        if not path:
            continue
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        operation = draw(st.sampled_from(["replace", "delete", "duplicate"]))
        if operation == "replace":
            parent[path[-1]] = draw(JSON_VALUE)
        elif operation == "delete":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.insert(path[-1], copy.deepcopy(parent[path[-1]]))
    return data


def assert_round_trip(data: dict):
    """An accepted import stored exactly the manifest: the export is its canonical form, and that
    export imports again without changing a row."""
    event("accepted")
    exported = export_library(Library.objects.get(slug=data["library"]["slug"]))
    assert exported == normalize_manifest(data)
    stored = db_content()
    import_manifest(parse_manifest(dump_manifest(exported)))
    assert db_content() == stored


def assert_refused_cleanly(exc: ManifestInvalid, before: dict):
    event("refused")
    assert exc.errors
    # The catch-all for database errors must never be what refused it: validation should.
    assert not any(e.message.startswith("database refused") for e in exc.errors), exc.errors
    assert db_snapshot() == before


@PROPERTY_SETTINGS
@given(mutated_manifest())
def test_mutated_manifests_are_refused_cleanly_or_imported(imported, data):
    with rolled_back():
        before = db_snapshot()
        try:
            import_manifest(data)
        except ManifestInvalid as exc:
            assert_refused_cleanly(exc, before)
        else:
            assert_round_trip(data)


@PROPERTY_SETTINGS
@given(st.data())
def test_corrupted_text_is_refused_cleanly_or_imported(imported, data):
    text_ = dump_manifest(sample_manifest())
    at = data.draw(st.integers(0, len(text_) - 1))
    junk = data.draw(st.sampled_from(["", "{", "}", ",", '"', "\\", "]", "x", "\x00"]))
    corrupted = text_[:at] + junk + text_[at + data.draw(st.integers(0, 3)) :]
    with rolled_back():
        before = db_snapshot()
        try:
            parsed = parse_manifest(corrupted)
            import_manifest(parsed)
        except ManifestInvalid as exc:
            assert_refused_cleanly(exc, before)
        else:
            assert_round_trip(parsed)
