"""Shared fixtures for the persona-library tests: a small valid manifest and a database snapshot."""

import copy

import pytest

from personas.manifest.io import import_manifest
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona

MODELS = (Library, Persona, CrossCritique, PairingRule, DomainTemplate, DomainTemplate.roles.through)


def sample_manifest(slug: str = "test-duel", prefix: str = "t") -> dict:
    """A small duel library that exercises every part of the format."""
    alpha, beta, host = f"{prefix}-alpha", f"{prefix}-beta", f"{prefix}-host"
    return {
        "agora_manifest": 1,
        "library": {
            "slug": slug,
            "name": "测试 Test duel",
            "format": "duel",
            "description": "A library for tests.",
            "protocol": {"default_rounds": 4, "max_rounds": 8},
        },
        "personas": [
            {
                "slug": alpha,
                "name": "阿尔法",
                "kind": "debater",
                "tier": "master",
                "tradition": "传统甲",
                "keywords": ["戒律", "森林"],
                "description": "持戒的禅师。",
                "description_en": "A master of discipline.",
                "cognitive_frame": "以戒为师。",
                "knowledge_domain": "律藏。",
                "decision_preferences": "先行后说。",
                "adversarial_rules": "指出对方缺乏实修。",
                "expression_style": "朴素，短句。",
                "cross_critique": [
                    {"target": beta, "point": "只重观照，忽视戒律。", "citation": "《律藏》卷一"},
                    {"target": beta, "point": "方法过于机械。", "citation": "《开示录》第三章"},
                ],
            },
            {
                "slug": beta,
                "name": "贝塔",
                "kind": "debater",
                "tier": "master",
                "tradition": "传统乙",
                "keywords": ["内观"],
                "density_score": 7.5,
                "cross_critique": [{"target": alpha, "point": "戒律是手段。", "citation": "《内观手册》"}],
            },
            {"slug": host, "name": "主持", "kind": "host", "source": "external-import"},
        ],
        "pairing_rules": [
            {"label": "戒律 vs 内观", "keywords": ["戒律", "内观"], "personas": [alpha, beta], "default_rounds": 3}
        ],
        "domain_templates": [{"slug": "scene", "name": "场景", "keywords": ["禅修"], "roles": [beta, alpha]}],
    }


def db_snapshot() -> dict:
    """Every row of every persona table, for 'the database is unchanged' assertions."""
    return {model._meta.label: list(model.objects.order_by("pk").values()) for model in MODELS}


def db_content() -> dict:
    """db_snapshot without row ids and timestamps, which a re-import may renumber or touch."""
    return {
        label: [{k: v for k, v in row.items() if k not in ("id", "updated_at")} for row in rows]
        for label, rows in db_snapshot().items()
    }


def db_counts() -> dict:
    return {model._meta.label: model.objects.count() for model in MODELS}


@pytest.fixture
def manifest() -> dict:
    return copy.deepcopy(sample_manifest())


@pytest.fixture
def imported(db) -> Library:
    """The sample library plus a second one, so refused imports have something to leave alone."""
    import_manifest(sample_manifest("other-duel", prefix="o"))
    return import_manifest(sample_manifest()).library


@pytest.fixture(autouse=True)
def english(settings):
    """These tests assert English messages; the project's default language is Chinese."""
    settings.LANGUAGE_CODE = "en"
