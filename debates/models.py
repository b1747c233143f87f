"""Debates as rows: what was asked, who sat at the table, every turn, and the report.

The runner's sink (`debates.sink`) is the only writer of a running debate's state; views create,
stop and resume. `Debate.seq` numbers every visible change so a viewer can be caught up exactly.
"""

import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from agora.text import strip_invisible
from personas.models import Persona, format_choices, name_in

REASONING_EFFORTS = [("low", _("low")), ("medium", _("medium")), ("high", _("high"))]


class Provider(models.Model):
    """An OpenAI-compatible server. Its key is either the *name* of the environment variable that
    holds it, or one entered on the "Connect a model" page, stored encrypted (never in clear)."""

    name = models.SlugField(_("name"), unique=True)
    base_url = models.URLField(_("base URL"), help_text=_("e.g. https://api.deepseek.com/v1"))
    api_key_env = models.CharField(
        _("API key variable"),
        max_length=80,
        blank=True,
        help_text=_(
            "Name of the environment variable holding the key, e.g. DEEPSEEK_API_KEY. Never the key. "
            "Only names the server allows (AGORA_PROVIDER_KEY_VARS); never one of its own secrets."
        ),
    )
    # A key entered on the "Connect a model" page, sealed with the host it may go to
    # (debates/key_vault.py); never shown again. Empty: the key variable above (or none).
    api_key_sealed = models.TextField(_("stored key (encrypted)"), blank=True, default="", editable=False)
    # Blank until someone picks one (the models can be fetched first).
    default_model = models.CharField(_("default model"), max_length=120, blank=True)
    concurrency = models.PositiveSmallIntegerField(_("concurrent calls"), default=4)
    timeout = models.PositiveIntegerField(_("timeout (s)"), default=120)
    # What the server said it offers, the last time someone fetched it (the start form offers these).
    offered_models = models.JSONField(_("models offered"), default=list, blank=True)
    # USD per million tokens; empty: the offline price table's, where it knows the model.
    input_price = models.DecimalField(
        _("input price (USD per million tokens)"), max_digits=10, decimal_places=4, null=True, blank=True
    )
    output_price = models.DecimalField(
        _("output price (USD per million tokens)"), max_digits=10, decimal_places=4, null=True, blank=True
    )
    models_fetched_at = models.DateTimeField(_("models fetched at"), null=True, blank=True)
    # Reasoning models (o3, gpt-5, deepseek-reasoner…): how hard they think; blank: not sent.
    reasoning_effort = models.CharField(
        _("reasoning effort"),
        max_length=8,
        blank=True,
        choices=REASONING_EFFORTS,
        help_text=_("Sent to reasoning models only (o1, o3, o4-mini, gpt-5…). Empty: not sent, the server's default."),
    )
    # What this server refused, learnt from its errors, by model id: {"o4-mini": {"max_tokens":
    # "max_completion_tokens", "temperature": null}} (rename or drop), so later turns do not pay the error.
    learnt_params = models.JSONField(_("learnt request parameters"), default=dict, blank=True)
    # Users are offered the provider (and its fetched models) only while it is approved. Staff
    # who are not superusers can point a provider anywhere, so what they add or re-point (and a
    # model list they fetch) waits for a superuser's approval (debates/admin.py).
    approved = models.BooleanField(
        _("approved"),
        default=True,
        help_text=_("Offered on the start form and used by debates only once a superuser approves it."),
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("approved by"),
    )
    # The model a debate runs on when it names none (the start form's first choice, the API's, MCP's
    # and the CLI's default, the banners' name): set by "Use this model" on the Connect page, used
    # only while the row is approved and has a default model (debates/default_model.py). At most one.
    is_default = models.BooleanField(
        _("default for new debates"),
        default=False,
        help_text=_("New debates run on this provider's default model unless they name another."),
    )

    class Meta:
        verbose_name = _("provider")
        verbose_name_plural = _("providers")
        ordering = ["name"]
        # A provider's address is where the server sends requests: loopback, private and
        # link-local ones reach this machine's own services and the LAN, so pointing one there
        # (or testing one that points there) takes this permission; superusers have it, so the
        # owner's local Ollama stays one click (debates/provider_reach.py).
        permissions = [
            ("use_private_provider_addresses", _("Can point providers at loopback, private or link-local addresses"))
        ]
        constraints = [
            models.CheckConstraint(condition=Q(concurrency__gte=1), name="provider_concurrency_positive"),
            models.CheckConstraint(
                condition=Q(api_key_env="") | Q(api_key_env__regex=r"^[A-Z_][A-Z0-9_]*$"),
                name="provider_key_is_a_variable_name",
            ),
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="one_default_provider"),
        ]

    def __str__(self):
        return f"{self.name} ({self.default_model})" if self.default_model else self.name

    def key_tail(self) -> str:
        """What a page may show of a stored key: its last four characters ("" when none)."""
        from debates import key_vault

        return key_vault.tail(self.api_key_sealed)

    def clean(self):
        from debates import provider_keys

        why = provider_keys.problem(self.api_key_env, self.base_url)
        if why:
            raise ValidationError({"api_key_env": why})

    def waiting_reason(self) -> str:
        """Why users may not choose this provider yet."""
        return _("The provider “%(name)s” is offered once a superuser approves it.") % {"name": self.name}


class SearchProvider(models.Model):
    """A web search service for research. Like `Provider`, the key is named by its environment
    variable, never stored."""

    class Kind(models.TextChoices):
        SEARXNG = "searxng", _("SearxNG (self-hosted, JSON API)")
        BRAVE = "brave", _("Brave Search API")

    name = models.SlugField(_("name"), unique=True)
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.SEARXNG)
    base_url = models.URLField(
        _("base URL"),
        blank=True,
        help_text=_("SearxNG: its address, e.g. http://127.0.0.1:8888. Brave: leave empty for the public API."),
    )
    api_key_env = models.CharField(
        _("API key variable"),
        max_length=80,
        blank=True,
        help_text=_("Name of the environment variable holding the key, e.g. BRAVE_API_KEY. Never the key."),
    )
    timeout = models.PositiveIntegerField(_("timeout (s)"), default=15)
    enabled = models.BooleanField(_("offered on the start form"), default=True)

    class Meta:
        verbose_name = _("search provider")
        verbose_name_plural = _("search providers")
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(api_key_env="") | Q(api_key_env__regex=r"^[A-Z_][A-Z0-9_]*$"),
                name="search_key_is_a_variable_name",
            ),
        ]

    def __str__(self):
        return f"{self.name} ({self.get_kind_display()})"

    def clean(self):
        from debates import provider_keys

        if self.kind == self.Kind.SEARXNG and not self.base_url:
            raise ValidationError({"base_url": _("SearxNG needs its address.")})
        if self.kind == self.Kind.BRAVE and not self.api_key_env:
            raise ValidationError({"api_key_env": _("Brave needs a key: name the variable that holds it.")})
        why = provider_keys.problem(self.api_key_env, self.base_url or "https://api.search.brave.com")
        if why:
            raise ValidationError({"api_key_env": why})


class Status(models.TextChoices):
    QUEUED = "queued", _("queued")
    LOADING = "loading_model", _("loading model")
    RUNNING = "running", _("running")
    WAITING = "waiting", _("waiting at checkpoint")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    STOPPED = "stopped", _("stopped")
    REFUSED = "refused", _("refused")


ACTIVE_STATUSES = (Status.QUEUED, Status.LOADING, Status.RUNNING)
FINAL_STATUSES = (Status.DONE, Status.FAILED, Status.STOPPED, Status.REFUSED)


def new_share_token() -> str:
    return secrets.token_urlsafe(24)


class Debate(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="debates"
    )
    question = models.TextField(_("question"))
    format = models.CharField(_("format"), max_length=20, choices=format_choices)
    options = models.JSONField(_("options"), default=dict, blank=True)
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.QUEUED)
    status_detail = models.CharField(_("status detail"), max_length=500, blank=True)
    # The same detail as the engine said it (msgid and values), so each viewer reads their language.
    status_text = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(_("warnings"), default=list, blank=True)
    # Round and phase headers in transcript order: [{"position", "round", "phase", "title"}].
    phases = models.JSONField(default=list, blank=True)
    topic_slug = models.CharField(_("topic slug"), max_length=120, blank=True)
    provider = models.ForeignKey(Provider, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model = models.CharField(_("model"), max_length=120, blank=True)
    # The debate's model's reasoning effort (a reasoning model only); blank: the provider's.
    reasoning_effort = models.CharField(_("reasoning effort"), max_length=8, blank=True, choices=REASONING_EFFORTS)
    checkpoint_reply = models.TextField(_("checkpoint reply"), null=True, blank=True)
    # A person's turn the run waits for ({"key", "speaker_name", "parts", "prompt", "deadline_at", …};
    # empty when none), and what people wrote, by turn key ({"text", "by", "at"} or {"stand_in"}).
    awaiting = models.JSONField(default=dict, blank=True)
    human_inputs = models.JSONField(default=dict, blank=True)
    # Turns regenerated with another model or instruction: {turn key: {"provider", "model", "instruction"}}.
    overrides = models.JSONField(default=dict, blank=True)
    # Where this debate branched off: a fork of another at one of its turns, or its side-swapped re-run.
    forked_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks", verbose_name=_("forked from")
    )
    forked_at = models.CharField(_("forked at turn"), max_length=120, blank=True)
    swap_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="swaps",
        verbose_name=_("sides swapped of"),
    )
    # Research: whether the debate may search, and with which provider (none: the environment's).
    research = models.BooleanField(_("research"), default=False)
    search_provider = models.ForeignKey(
        SearchProvider, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    stop_requested = models.BooleanField(default=False)
    # The lease of whoever runs the debate (a web process or a worker): renewed by a heartbeat,
    # taken over when it goes stale, and checked on every write so two runners never both write.
    runner_id = models.CharField(max_length=120, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)  # of completion_tokens, those of thinking
    tokens_estimated = models.BooleanField(default=False)
    token_cap = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(_("cost (USD)"), default=0.0)  # every attempt of every turn
    cost_unknown = models.BooleanField(default=False)  # some turn's model has no known price
    rounds_planned = models.PositiveSmallIntegerField(null=True, blank=True)
    seq = models.PositiveBigIntegerField(default=0, help_text="Numbers every visible change, for catch-up.")
    shared = models.BooleanField(_("shared by link"), default=False)
    share_token = models.CharField(max_length=64, unique=True, default=new_share_token, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)  # when the running span now (or last) began
    finished_at = models.DateTimeField(null=True, blank=True)
    # Seconds the debate ran in the spans that ended (a resume, the checkpoint): the page's timer
    # shows these plus the span now running, from `started_at`.
    running_seconds = models.FloatField(default=0.0)

    class Meta:
        verbose_name = _("debate")
        verbose_name_plural = _("debates")
        permissions = [("view_all_debates", _("Can see every debate, and control those without an owner"))]
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["owner", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=Status.values), name="debate_status_known"),
        ]

    def __str__(self):
        return self.question[:80]

    def get_absolute_url(self):
        return reverse("debates:live", args=[self.pk])

    def usage(self) -> dict:
        """Tokens and money as the exports and the API give them."""
        return {
            "prompt": self.prompt_tokens,
            "completion": self.completion_tokens,
            "reasoning": self.reasoning_tokens,
            "estimated": self.tokens_estimated,
            "cap": self.token_cap,
            "cost_usd": self.cost,
            "cost_unknown": self.cost_unknown,
        }

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def running_time(self) -> float:
        """Seconds the debate has run, across resumes and checkpoints, the span now running
        included."""
        seconds = self.running_seconds or 0.0
        if self.status == Status.RUNNING and self.started_at:
            seconds += max(0.0, (timezone.now() - self.started_at).total_seconds())
        return seconds

    @property
    def group_name(self) -> str:
        return f"debate-{self.pk}"


class Invitation(models.TextChoices):
    NONE = "", _("none (the owner's own seat, or a model's)")
    PENDING = "pending", _("invited, no answer yet")
    ACCEPTED = "accepted", _("accepted")
    DECLINED = "declined", _("declined")
    LEFT = "left", _("left the seat")
    WITHDRAWN = "withdrawn", _("invitation withdrawn")


# A seat whose person is gone: every turn of it goes as a missed turn does.
VACATED = (Invitation.DECLINED, Invitation.LEFT, Invitation.WITHDRAWN)


class Seat(models.Model):
    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="seats")
    persona = models.ForeignKey(Persona, on_delete=models.PROTECT, related_name="+")
    position = models.CharField(_("position"), max_length=10, blank=True)  # for | against
    order = models.PositiveSmallIntegerField(default=0)
    provider = models.ForeignKey(Provider, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model = models.CharField(_("model"), max_length=120, blank=True)
    # The seat's model's reasoning effort (a reasoning model only); blank: the provider's.
    reasoning_effort = models.CharField(_("reasoning effort"), max_length=8, blank=True, choices=REASONING_EFFORTS)
    # A person in this seat (they write its turns on the live page), and who speaks when they miss
    # the deadline: a model, or nobody (the turn passes).
    human = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    stand_in = models.CharField(
        _("when the person misses the deadline"),
        max_length=8,
        default="llm",
        choices=[("llm", _("a model speaks for them")), ("pass", _("the turn passes"))],
    )
    # Another user's seat is an invitation: pending until they accept (only then do they see the
    # debate, and is it in their list); declined, left or withdrawn, the seat speaks as if every
    # turn were missed. `invited_name` is the name the owner typed, kept whether or not a user has
    # it (`human` is set only when one does), so the owner's page never tells the two apart.
    invitation = models.CharField(_("invitation"), max_length=10, blank=True, default="", choices=Invitation.choices)
    invited_name = models.CharField(_("invited user name"), max_length=150, blank=True)

    class Meta:
        verbose_name = _("seat")
        verbose_name_plural = _("seats")
        ordering = ["order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["debate", "persona"], name="seat_unique_persona"),
            models.CheckConstraint(condition=Q(position__in=["", "for", "against"]), name="seat_position_known"),
        ]

    def __str__(self):
        return f"{self.persona.name} @ {self.debate_id}"

    @property
    def for_a_person(self) -> bool:
        """A person writes this seat's turns (or was asked to: then a missed turn's stand-in does)."""
        return self.human_id is not None or self.invitation != Invitation.NONE

    @property
    def present(self) -> bool:
        """Its person may see the debate and write the seat's turns: their own seat, or accepted."""
        return self.human_id is not None and self.invitation in (Invitation.NONE, Invitation.ACCEPTED)

    @property
    def vacated(self) -> bool:
        return self.invitation in VACATED

    @property
    def person_name(self) -> str:
        """The name shown for the seat's person: the name the owner typed, or the user's own."""
        return self.invited_name or (self.human.get_username() if self.human_id else "")


class Turn(models.Model):
    class State(models.TextChoices):
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")
        INTERRUPTED = "interrupted", _("interrupted")

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="turns")
    key = models.CharField(max_length=120)
    position = models.PositiveIntegerField(default=0, help_text="Order in the transcript.")
    round = models.PositiveSmallIntegerField(default=0)
    phase = models.CharField(max_length=30)
    speaker_slug = models.CharField(max_length=80)
    speaker_name = models.CharField(max_length=120)
    speaker_name_en = models.CharField(max_length=120, blank=True)  # empty: speaker_name in both languages
    model = models.CharField(max_length=200, blank=True)
    messages = models.JSONField(default=list, help_text="The exact messages sent.")
    text = models.TextField(blank=True)
    # A reasoning model's thinking: shown apart (collapsed), never the speech, never read by the format.
    thinking = models.TextField(blank=True)
    summary = models.CharField(max_length=200, blank=True)
    data = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.RUNNING)
    error = models.TextField(blank=True)
    # Earlier attempts' partial text (a crash, a failure, a retry): kept, never shown as the turn.
    history = models.JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)  # of completion_tokens, those of the thinking
    usage_estimated = models.BooleanField(default=False)
    cost = models.FloatField(null=True, blank=True)  # USD of this attempt; None: the price is unknown
    latency = models.FloatField(null=True, blank=True)
    # When the text arrived (the replay plays it back at this pace): [[ms since started_at, characters
    # so far], …], one point per flush (debates.pace), at most PACE_POINTS. None: a turn
    # written before it was kept (it replays at an even pace over started_at…finished_at).
    pace = models.JSONField(null=True, blank=True, default=None)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("turn")
        verbose_name_plural = _("turns")
        ordering = ["position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["debate", "key"], name="turn_unique_key"),
            models.CheckConstraint(
                condition=Q(state__in=["running", "done", "failed", "interrupted"]), name="turn_state_known"
            ),
        ]

    def __str__(self):
        return f"{self.key} ({self.state})"

    def speaker_in(self, lang: str | None = None) -> str:
        """The speaker's name for a reader of `lang` (default: the active language)."""
        return strip_invisible(name_in(lang, self.speaker_name, self.speaker_name_en))

    @property
    def speaker_called(self) -> str:
        """The speaker's name in the active language (templates, frames)."""
        return self.speaker_in()


class Report(models.Model):
    debate = models.OneToOneField(Debate, on_delete=models.CASCADE, related_name="report")
    verdict_markdown = models.TextField()
    transcript_markdown = models.TextField()
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("report")
        verbose_name_plural = _("reports")

    def __str__(self):
        return f"report of {self.debate_id}"


class Comparison(models.Model):
    """A finished debate's conclusion against a single answer to the same question at about the
    same cost, shown as A and B in random order; the reader votes before the names are shown."""

    class State(models.TextChoices):
        RUNNING = "running", _("running")
        READY = "ready", _("ready")
        FAILED = "failed", _("failed")

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="comparisons")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING)
    # The arms: {"debate": {"text"}, "single": {"text", "model", "prompt_tokens", "completion_tokens",
    # "cost", "max_tokens", "rule"}}; `order` the arms as shown, A first.
    arms = models.JSONField(default=dict)
    order = models.JSONField(default=list)
    error = models.TextField(blank=True)
    vote = models.CharField(max_length=4, blank=True, choices=[("A", "A"), ("B", "B"), ("C", "C"), ("tie", _("tie"))])
    winner = models.CharField(max_length=10, blank=True)  # the arm voted for ("" for a tie)
    reason = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)  # the single answer's model, for the tally
    created_at = models.DateTimeField(auto_now_add=True)
    voted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("comparison")
        verbose_name_plural = _("comparisons")
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"comparison {self.pk} of {self.debate_id}"


class Distillation(models.Model):
    """L3 characters being distilled for someone's start form (`debates.characters`): one row
    while the model calls run inside the Start request, removed when they end. It counts against
    its owner's running limit like a comparison being written (`admission`), until it ends or its
    deadline passes (a process that died mid-request leaves a row nobody removes)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.CASCADE, related_name="+")
    people = models.PositiveSmallIntegerField(default=1)  # how many are being distilled (one call each)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("distillation")
        verbose_name_plural = _("distillations")
        indexes = [models.Index(fields=["owner", "created_at"])]

    def __str__(self):
        return f"distillation {self.pk} for {self.owner_id}"


class ApiToken(models.Model):
    """A user's key to the JSON API (`Authorization: Bearer <token>`). Only the token's SHA-256 is
    kept, so a copy of the database opens nothing; the token itself is shown once, when made."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens", verbose_name=_("user")
    )
    name = models.CharField(_("name"), max_length=100)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(_("prefix"), max_length=16, editable=False)  # enough to tell tokens apart
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)
    # Tokens made before scopes existed keep what they had: full access.
    read_only = models.BooleanField(
        _("read only"),
        default=False,
        help_text=_("Lists, reads, exports and follows debates; cannot start, stop or delete any."),
    )
    # The site's language its owner used when making it (`issue`); empty: the site's default.
    language = models.CharField(
        _("language"),
        max_length=10,
        blank=True,
        help_text=_("The API answers in this language when a request asks for none (Accept-Language)."),
    )

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"


# -- the live audience (#30): votes and questions from the floor (debates/audience.py) -------------


class Audience(models.Model):
    """A debate's audience settings and the version of its public state: every vote, question and
    moderation bumps `version` in its transaction, and its frame carries it (a viewer keeps the
    newest). Apart from the Debate row, which the running debate's sink alone writes."""

    debate = models.OneToOneField(Debate, on_delete=models.CASCADE, primary_key=True, related_name="audience")
    version = models.PositiveIntegerField(default=0)
    voting_closed = models.BooleanField(_("voting closed"), default=False)
    # The moderated format's chair may take the top question between rounds on its own.
    chair_takes = models.BooleanField(_("the chair takes questions"), default=False)
    # The sides of a debate whose speakers are picked when it runs (the duel's pair), kept once
    # known: [{"key", "name", "name_en"}].
    sides = models.JSONField(default=list, blank=True)
    # Set by the first vote or question and never unset: until then the page, its frames and the
    # moderation list skip the reads of votes and questions (four for a viewer, seven for the
    # owner) that a debate nobody voted or asked in has no rows for.
    participated = models.BooleanField(default=False)

    class Meta:
        verbose_name = _("audience")
        verbose_name_plural = _("audiences")

    def __str__(self):
        return f"audience of {self.debate_id}"


class Vote(models.Model):
    """One viewer's vote in one phase ("before": until the first round ends; "after": once the
    report is in). The viewer is "user:<pk>" or "anon:<id>" (a signed cookie's id); a second vote
    in the same phase replaces the first."""

    class Phase(models.TextChoices):
        BEFORE = "before", _("before")
        AFTER = "after", _("after")

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="votes")
    phase = models.CharField(max_length=6, choices=Phase.choices)
    choice = models.CharField(max_length=100)
    voter = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Where an anonymous viewer acted from (`audience.address_key`: a keyed digest of its network,
    # not the address): what the limits per address count. Empty for a signed-in viewer.
    address = models.CharField(max_length=32, blank=True, default="")
    at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("vote")
        verbose_name_plural = _("votes")
        constraints = [models.UniqueConstraint(fields=["debate", "phase", "voter"], name="one_vote_per_phase")]

    def __str__(self):
        return f"{self.voter} {self.phase} {self.choice}"


class FloorQuestion(models.Model):
    """A viewer's question from the floor: plain text, escaped wherever it is shown. Taken into a
    round (by the owner, or by the moderated chair when allowed) it is material every speaker reads
    from the next phase on."""

    debate = models.ForeignKey(Debate, on_delete=models.CASCADE, related_name="floor_questions")
    voter = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    text = models.CharField(max_length=300)
    address = models.CharField(max_length=32, blank=True, default="")  # as Vote.address
    at = models.DateTimeField(auto_now_add=True)
    hidden = models.BooleanField(default=False)
    taken_at = models.DateTimeField(null=True, blank=True)
    taken_by = models.CharField(max_length=10, blank=True)  # owner | chair

    class Meta:
        verbose_name = _("question from the floor")
        verbose_name_plural = _("questions from the floor")
        ordering = ["at", "id"]

    def __str__(self):
        return self.text[:40]


class FloorUpvote(models.Model):
    question = models.ForeignKey(FloorQuestion, on_delete=models.CASCADE, related_name="upvotes")
    voter = models.CharField(max_length=64)
    address = models.CharField(max_length=32, blank=True, default="")  # as Vote.address

    class Meta:
        constraints = [models.UniqueConstraint(fields=["question", "voter"], name="one_upvote_per_viewer")]

    def __str__(self):
        return f"{self.voter} ▲ {self.question_id}"
