"""The purity rule (docs/manifest.md): a persona holds only who it is, never a particular debate question.

The question reaches a persona at run time through the task decorator, so persona text that reads
like one is refused. Persona.clean() applies this, so the manifest importer and the admin's persona
form run the same check.
"""

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# Phrases that belong to a task decorator, not to a persona: persona text that contains one is
# almost certainly carrying a particular debate question.
MARKERS = (
    "本场议题",
    "本次议题",
    "本场辩题",
    "本次辩题",
    "本场辩论",
    "辩题：",
    "辩题:",
    "议题：",
    "议题:",
    "这次讨论",
    "本次讨论",
    "今天的问题",
    "this debate",
    "the debate question",
    "today's topic",
    "topic:",
    "topic：",
)
# The persona's own words; its name and its critiques of others are not persona text.
FIELDS = (
    "cognitive_frame",
    "knowledge_domain",
    "decision_preferences",
    "adversarial_rules",
    "expression_style",
    "cognitive_frame_en",
    "knowledge_domain_en",
    "decision_preferences_en",
    "adversarial_rules_en",
    "expression_style_en",
    "description",
    "description_en",
)
MESSAGE = _('Reads like a debate question ("%(marker)s"); persona text describes who the persona is.')


def purity_marker(text: str) -> str | None:
    """The first task-decorator phrase found in `text`, or None."""
    folded = text.replace("’", "'").casefold()
    return next((marker for marker in MARKERS if marker.casefold() in folded), None)


def purity_errors(persona: Mapping[str, Any]) -> dict[str, list[ValidationError]]:
    """Field name -> what breaks the rule there, for a persona's field values (a model's or a manifest's).

    A keyword's error carries its position as params["item"], so a manifest can name `keywords[1]`.
    """
    texts = [(name, None, persona.get(name)) for name in FIELDS]
    keywords = persona.get("keywords")
    texts += [("keywords", i, k) for i, k in enumerate(keywords)] if isinstance(keywords, list) else []
    errors: dict[str, list[ValidationError]] = {}
    for name, item, value in texts:
        marker = purity_marker(value) if isinstance(value, str) else None
        if marker:
            error = ValidationError(MESSAGE, code="purity", params={"marker": marker, "item": item})
            errors.setdefault(name, []).append(error)
    return errors
