"""A turn, in words a format and its run share: the plan a format builds (`TurnPlan`, one fresh
LLM call), what comes back (`TurnResult`), the clients a debate's turns go to (`ClientPool`), the
ceiling a reply is cut at, and the ways a run stops early (`DebateAborted`, `AwaitingHuman`,
`CapReached`). `debates.engine.context.DebateContext` runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from debates.engine.i18n import Text, gettext_noop, text, verbatim
from debates.engine.spec import PersonaSpec
from debates.providers.base import LLMClient, Message

if TYPE_CHECKING:
    from debates.engine.structure import Form

# (text) -> (text to keep, parsed data). Runs after streaming: may cut, must not raise.
PostProcess = Callable[[str], tuple[str, dict[str, Any]]]


def cut_slack(cut_at: int) -> int:
    """Characters read past a cut before the reply is closed: room for what is taken off before
    the count (a heading copied from the prompt, the speaker's own name as a label), so a speech
    stopped here is still longer than the cut and gets its mark."""
    return 40 + cut_at // 10


def reply_ceiling(max_tokens: int) -> int:
    """Estimated tokens past which a reply is cut whatever the server does with max_tokens. Twice
    the request, because the estimate counts a CJK character as a token where real tokenizers often
    pack two: a server that honours max_tokens never reaches it."""
    return 2 * max_tokens + 32


class ReplyMeter:
    """Counts a streaming reply's estimated tokens (as `estimate_tokens` would for the whole
    text, without re-reading it per delta)."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.cjk = self.other = 0

    def add(self, delta: str) -> bool:
        """Count `delta`; true once the reply is past its ceiling."""
        cjk = sum(1 for ch in delta if "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff")
        self.cjk += cjk
        self.other += len(delta) - cjk
        return self.cjk + (self.other + 3) // 4 > self.ceiling

    @property
    def chars(self) -> int:
        """Characters counted so far."""
        return self.cjk + self.other


class DebateAborted(Exception):
    """The debate cannot go on: a turn failed, or a rule refuses the input. The message is for
    users: a `Text` (translated where it is shown), or a plain string shown as it is."""

    def __init__(self, message: str, *, outcome: str = "failed"):
        super().__init__(message)
        self.text = message if isinstance(message, Text) else verbatim(message)
        self.outcome = outcome


class AwaitingHuman(Exception):
    """A person's turn has come and they have not written it: the run stops here and waits, in the
    database, until they do (or the deadline hands the seat to a model, or passes it)."""

    def __init__(self, plan: TurnPlan):
        super().__init__(plan.key)
        self.plan = plan


class CapReached(Exception):
    """A turn was not started: the token cap has no room left for it. `done` holds the turns of
    the same parallel round that did run."""

    def __init__(self, key: str, done: list[TurnResult] | None = None, label: Text | None = None):
        super().__init__(key)
        self.key = key
        self.done = done or []
        self.label = label or text(gettext_noop("the next turn"))  # as people name it, never the key


def turn_label(speaker: str, round_no: int | None) -> Text:
    """A turn as a message to people names it: its speaker and round, never its key."""
    if round_no:
        return text(gettext_noop("%(speaker)s's turn in round %(n)d"), speaker=speaker, n=round_no)
    return text(gettext_noop("%(speaker)s's turn"), speaker=speaker)


@dataclass
class TurnPlan:
    key: str
    round: int
    phase: str
    speaker: PersonaSpec
    messages: list[Message]
    max_tokens: int
    summary_limit: int = 80
    stop: list[str] = field(default_factory=list)
    client: str | None = None
    postprocess: PostProcess | None = None
    exempt_from_cap: bool = False
    reserved: bool = False  # runs even when the cap is spent (a verdict: the report needs it)
    extra: dict[str, Any] | None = None  # request-body additions (a local server's grammar)
    form: Form | None = None  # the labelled parts asked for (a person's composer shows them)
    chars: int = 0  # without a form: the speech's limit in characters (a person's composer keeps to it)
    # The moderator cuts a speech at this many characters (moderated): past it, by `cut_slack`,
    # the reply is no longer read, so what would be cut is neither paid for nor shown live.
    cut_at: int = 0


@dataclass
class TurnResult:
    key: str
    speaker: PersonaSpec
    round: int
    phase: str
    text: str
    summary: str
    data: dict[str, Any]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replayed: bool = False


class ClientPool:
    """The LLM clients of one debate: a default and any per-seat overrides by key."""

    def __init__(self, default: LLMClient, others: Mapping[str, LLMClient] | None = None):
        self.default = default
        self.others = dict(others or {})

    def get(self, key: str | None) -> LLMClient:
        return self.others.get(key, self.default) if key else self.default

    def all(self) -> list[LLMClient]:
        return [self.default, *self.others.values()]
