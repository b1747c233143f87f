"""The debate spec: plain dataclasses the engine runs on.

`debates.runner` is the only place that turns ORM rows into these; tests build them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FORMATS = ("duel", "panel", "roundtable", "moderated")


@dataclass(frozen=True)
class PersonaSpec:
    slug: str
    name: str
    kind: str = "debater"  # debater | host | moderator
    tier: str = ""
    role: str = ""
    tradition: str = ""
    keywords: tuple[str, ...] = ()
    description: str = ""
    text: str = ""  # the persona proper: frame, domain, preferences, rules, style
    veto_right: bool = False
    schema_type: str = ""
    density_score: float | None = None


@dataclass(frozen=True)
class CritiqueSpec:
    source: str
    target: str
    point: str
    citation: str


@dataclass(frozen=True)
class PairingRuleSpec:
    personas: tuple[str, str]
    keywords: tuple[str, ...] = ()
    default_rounds: int | None = None
    label: str = ""


@dataclass(frozen=True)
class DomainTemplateSpec:
    slug: str
    name: str
    keywords: tuple[str, ...]
    roles: tuple[str, ...]


@dataclass(frozen=True)
class SeatSpec:
    persona: PersonaSpec
    position: str = ""  # moderated position-based: "for" | "against"
    client: str | None = None  # key of the LLM client for this seat; None = the debate's default


@dataclass(frozen=True)
class CompletedTurn:
    """A turn already finished in an earlier run: replayed on resume, never regenerated."""

    key: str
    text: str
    summary: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Options:
    rounds: int | None = None  # duel / moderated; None = the protocol default
    mode: str = ""  # roundtable: quick|standard|deep; moderated: round-robin|position-based|free-form
    research_budget: str = "standard"  # panel: light|standard|deep
    no_interrupt: bool = False  # roundtable: run through the checkpoint
    evidence: str = ""  # user-supplied material for the evidence pack
    user_context: str = ""  # what the user says about themselves and their constraints
    token_budget: int | None = None  # moderated: whole-run budget; panel: explicit cap override
    max_chars: int | None = None  # moderated: per-speech character limit
    proposition_type: str = ""  # panel: investment|choice|truth, when the user states it
    force: bool = False  # roundtable: debate even when the suitability check says "answer directly"
    max_tokens: dict[str, int] = field(default_factory=dict)  # per turn type overrides
    temperature: float | None = None


@dataclass
class DebateSpec:
    question: str
    format: str
    seats: list[SeatSpec] = field(default_factory=list)
    options: Options = field(default_factory=Options)
    # The persona pool the format may choose from (duel pairing, roundtable recommendation).
    pool: list[PersonaSpec] = field(default_factory=list)
    host: PersonaSpec | None = None  # panel host / moderated moderator
    critiques: list[CritiqueSpec] = field(default_factory=list)
    pairing_rules: list[PairingRuleSpec] = field(default_factory=list)
    domain_templates: list[DomainTemplateSpec] = field(default_factory=list)
    protocol: dict[str, Any] = field(default_factory=dict)
    # Resume state: finished turns by key, and the user's answer at the roundtable checkpoint.
    completed: dict[str, CompletedTurn] = field(default_factory=dict)
    checkpoint_reply: str | None = None
    # The longest one turn may take, start to end (seconds; None: no limit). Set by the operator.
    turn_deadline: float | None = None

    def __post_init__(self):
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}; choose one of {', '.join(FORMATS)}")
