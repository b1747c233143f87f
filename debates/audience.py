"""The live audience (#30): votes before and after, questions from the floor, and their moderation.

Who: anyone who may see the debate (its owner, a share link's visitors, signed in or not, staff who
see every debate, people at the table). A viewer is "user:<pk>" when signed in, else
"anon:<id>", the id of a signed cookie (`VOTER_COOKIE`) given to the browser on its first vote or
question: one vote per phase per viewer (a second replaces the first), one up-vote per question.
A browser that drops its cookie is a new viewer each time (issue 47: 300 of 300 votes from one
client), so anonymous viewers also share budgets per address and per share link (`_budget`).

Votes: a "before" vote on the debate's sides until its first round ends, an "after" vote once the
report is in; the owner can close voting. Sides: the duel's two masters, a position-based
moderated debate's for and against, a roundtable's options once its first round has named them
(each role's thesis: "before" is open from then, the checkpoint's pause, until round 2 starts).
Panels and free-form moderated debates name no sides, so they take no votes: `options` is empty.

Live: every change bumps `Audience.version` in its transaction and, after the commit, the public
part of the panel (tallies, the open questions, those taken "from the floor") goes to the debate's
channel groups as a `debate.audience` message with that version, once per language; each viewer's
consumer keeps only a newer version (`debates.consumers`). It is not one of the debate's numbered
frames: the running debate's sink alone numbers those.

The engine reads the taken questions through `FloorSource` (`DebateSpec.floor`), at the start of
each phase: material every speaker reads, never another speaker's words.
"""

from __future__ import annotations

import ipaddress
import secrets
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agora.text import strip_invisible
from debates import frames
from debates.access import can_control, sees_everything
from debates.engine import registry
from debates.models import Audience, Debate, FloorQuestion, FloorUpvote, Status, Turn, Vote
from personas.models import name_in

VOTER_COOKIE = "agora_voter"
VOTER_SALT = "agora.audience.voter"
VOTER_MAX_AGE = 365 * 24 * 3600
ANONYMOUS = "anon:"
ADDRESS_SALT = "agora.audience.address"
MAX_QUESTION = 280  # characters
QUESTION_INTERVAL = 30  # seconds between two questions of one viewer
QUESTIONS_PER_VIEWER = 5  # open (not hidden) questions one viewer may have on one debate
PARTS = "debates/_audience.html"


class Refused(Exception):
    """What the viewer asked for is not allowed now; the message says why (translated)."""


# -- who is voting ---------------------------------------------------------------------------------


def voter_of(request, *, create: bool = False) -> str | None:
    """The viewer's key: "user:<pk>", else the browser's signed cookie id ("anon:<id>"); a new id
    when `create` (kept on the request for `remember`), else None for a browser without one."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    ident = getattr(request, "new_voter_id", None) or request.get_signed_cookie(
        VOTER_COOKIE, default=None, salt=VOTER_SALT, max_age=VOTER_MAX_AGE
    )
    if not ident and create:
        ident = request.new_voter_id = secrets.token_urlsafe(12)
    return f"anon:{ident}" if ident else None


def remember(request, response):
    """Give a browser its new voter id (signed: a forged one is worth nothing)."""
    ident = getattr(request, "new_voter_id", None)
    if ident:
        response.set_signed_cookie(
            VOTER_COOKIE,
            ident,
            salt=VOTER_SALT,
            max_age=VOTER_MAX_AGE,
            httponly=True,
            samesite="Lax",
            secure=request.is_secure(),
        )
    return response


def address_key(address: str | None) -> str:
    """The network an anonymous viewer acts from, as the audience rows keep it: an IPv4 address,
    or an IPv6 /64 (one client is given a whole /64 and may use any address in it), as a keyed
    digest so the rows hold no address. Empty without an address (an in-process caller)."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        network = address  # not an address ("unknown"): every such viewer shares one budget
    else:
        ip = getattr(ip, "ipv4_mapped", None) or ip
        network = str(ipaddress.ip_network(f"{ip}/64", strict=False)) if ip.version == 6 else str(ip)
    return salted_hmac(ADDRESS_SALT, network, algorithm="sha256").hexdigest()[:32]


def _key(voter: str, address: str | None) -> str:
    """The address key an action is counted under: an anonymous viewer's only (signed-in viewers
    keep their per-user rules, wherever they are)."""
    return address_key(address) if voter.startswith(ANONYMOUS) else ""


def _budget(voter: str, rows, key: str, per_address: int, per_link: int, *, address_full: str, link_full: str):
    """Refuse an anonymous `voter`'s new action when `rows` (the same kind of action, where it
    counts: a phase's votes, a debate's questions, a question's up-votes) already hold `per_address`
    from their address or `per_link` from anonymous viewers at all: anonymous viewers reach a
    debate only through its share link. Called under the audience row's lock, so the count is
    exact however many arrive at once. A signed-in viewer's actions are not counted here."""
    if not voter.startswith(ANONYMOUS):
        return
    anonymous = rows.filter(voter__startswith=ANONYMOUS)
    if key and anonymous.filter(address=key).count() >= per_address:
        raise Refused(address_full)
    if anonymous.count() >= per_link:
        raise Refused(link_full)


def shown_voter(voter: str, users: dict[int, str]) -> str:
    """How a moderator sees a viewer: a user's name, or an anonymous browser's short tag."""
    kind, _sep, ident = voter.partition(":")
    if kind == "user":
        return users.get(int(ident), voter)
    return _("anonymous browser %(tag)s") % {"tag": signing.Signer(salt=VOTER_SALT).signature(ident)[:6]}


# -- sides and windows -----------------------------------------------------------------------------


@dataclass
class Side:
    key: str
    label: str


def options(debate: Debate, language: str | None = None, state: Audience | None = None) -> list[Side]:
    """The sides a vote is on (empty: this debate takes no votes), as its format says: a format
    whose seats argue assigned positions, for and against; one that seats exactly two who trade
    the opening (the duel's masters), those two. `state`: the audience row the caller already
    read (a page reads it once, not once per question it asks)."""
    fmt = registry.get(debate.format)
    mode = fmt.mode((debate.options or {}).get("mode"))
    if mode is not None and mode.positions:
        return [Side("for", _("For")), Side("against", _("Against"))]
    if fmt.sides == "order" and fmt.seating.count == (2, 2):
        return [Side(p["key"], name_in(language, p["name"], p["name_en"])) for p in _pair(debate, fmt, state=state)]
    if fmt.first_round_theses:
        return [Side(p["key"], name_in(language, p["name"], p["name_en"])) for p in _theses(debate, state)]
    return []


def _theses(debate: Debate, state: Audience | None = None) -> list[dict]:
    """The roundtable's options: each seat's round-1 thesis, by its role, once every one of them
    is stated (none before), kept with the audience so later seat changes move no vote."""
    state = state or state_of(debate)
    if state.sides:
        return state.sides
    r1 = list(debate.turns.filter(round=1, key__startswith="r1:").order_by("pk"))
    if not r1 or any(t.state != Turn.State.DONE for t in r1) or not first_round_over(debate, theses=True):
        return []
    # One side per seat, in seat order: a statement asked again ("r1:optimist:again") is the same
    # seat's (reading.discarded_keys would drop the first and list the rewrite last, out of order).
    seats = {t.speaker_slug: t for t in r1}
    sides = [{"key": t.speaker_slug, "name": t.speaker_name, "name_en": t.speaker_name_en} for t in seats.values()]
    Audience.objects.filter(debate=debate).update(sides=sides)
    state.sides = sides
    return sides


def fix_sides(debate: Debate, library=None) -> None:
    """At creation: the sides a vote will be on, where the format names them before the run (the
    duel's pair), computed with `library` (the start form's `LibrarySpec`) when given."""
    fmt = registry.get(debate.format)
    if fmt.sides == "order" and fmt.seating.count == (2, 2):
        _pair(debate, fmt, library)


def _pair(debate: Debate, fmt, library=None, state: Audience | None = None) -> list[dict]:
    """The two who will speak: the seats, else the pair the format picks for the question (as its
    run will), kept with the audience so the sides never change under the votes."""
    state = state or state_of(debate)
    if state.sides:
        return state.sides
    seats = sorted(debate.seats.select_related("persona"), key=lambda s: s.pk)
    people = [s.persona for s in seats][:2]
    if len(people) < 2:
        from debates.specs import library_spec  # the start form's suggestion, as the run will pair

        suggestion = fmt.suggest(debate.question, library or library_spec(fmt), None)
        people = [persona for persona, _note in suggestion.personas][:2]
    if len(people) < 2:
        return []
    sides = [{"key": p.slug, "name": p.name, "name_en": p.name_en} for p in people]
    Audience.objects.filter(debate=debate).update(sides=sides)
    state.sides = sides
    return sides


def chair_may_take(debate: Debate) -> bool:
    """The format has a chair who runs it between rounds (the moderated format's moderator)."""
    return registry.get(debate.format).seating.host_kind == "moderator"


def first_round_over(debate: Debate, *, theses: bool = False) -> bool:
    """The first round ended: a later phase began, or the report is in (`theses`: or the debate
    waits at its checkpoint after it)."""
    if theses and debate.status == Status.WAITING:
        return True
    phases = debate.phases or []
    started = [i for i, p in enumerate(phases) if p.get("round") == 1]
    if started and any(p.get("round") != 1 for p in phases[started[0] + 1 :]):
        return True
    return has_report(debate)


def has_report(debate: Debate) -> bool:
    # An instance that has fetched its report already knows (the live page's snapshot did, and a
    # report created for this instance sets it too): the page asked the database four times.
    if Debate.report.related.is_cached(debate):
        return Debate.report.related.get_cached_value(debate) is not None
    return Debate.objects.filter(pk=debate.pk, report__isnull=False).exists()


def state_of(debate: Debate) -> Audience:
    return Audience.objects.get_or_create(debate=debate)[0]


def open_phase(debate: Debate, state: Audience | None = None) -> str | None:
    """ "before", "after", or None (no sides, voting closed, or between the two)."""
    state = state or state_of(debate)
    if state.voting_closed or not options(debate, state=state):
        return None
    if has_report(debate):
        return Vote.Phase.AFTER
    if debate.status in (Status.DONE, Status.REFUSED):
        return None
    if registry.get(debate.format).first_round_theses:
        # Its options exist once the first round has named them: "before" is open from then
        # (the checkpoint's pause) until the second round starts.
        return Vote.Phase.BEFORE if not _later_round_started(debate) else None
    return Vote.Phase.BEFORE if not first_round_over(debate) else None


def _later_round_started(debate: Debate) -> bool:
    return any((p.get("round") or 0) >= 2 for p in debate.phases or [])


def asks_open(debate: Debate) -> bool:
    """Questions are taken while the debate can still hear them: until its report."""
    return debate.status not in (Status.DONE, Status.REFUSED) and not has_report(debate)


# -- changes ---------------------------------------------------------------------------------------


def _bump(debate_id: int, *, joined: bool = False) -> None:
    """In the change's transaction: the next version, announced after the commit. `joined`: a
    vote or a question, the first of which marks the audience as having participated."""
    Audience.objects.get_or_create(debate_id=debate_id)
    Audience.objects.filter(debate_id=debate_id).update(
        version=F("version") + 1, **({"participated": True} if joined else {})
    )
    transaction.on_commit(lambda: announce(debate_id))


def vote(debate: Debate, voter: str, choice: str, *, user=None, address: str | None = None) -> Vote:
    """`address`: where the request came from (REMOTE_ADDR), for an anonymous viewer's budget; a
    vote that replaces the viewer's own is no new vote and always counts."""
    key = _key(voter, address)
    with transaction.atomic():
        state = Audience.objects.select_for_update().get_or_create(debate=debate)[0]
        phase = open_phase(debate, state)
        if phase is None:
            raise Refused(_("Voting is not open now."))
        if choice not in {side.key for side in options(debate, state=state)}:
            raise Refused(_("Choose one of the sides."))
        cast = Vote.objects.filter(debate=debate, phase=phase)
        if not cast.filter(voter=voter).exists():
            _budget(
                voter,
                cast,
                key,
                settings.AGORA_AUDIENCE_PER_ADDRESS,
                settings.AGORA_AUDIENCE_PER_LINK,
                address_full=_("Too many votes from your network without an account: sign in to vote."),
                link_full=_("This share link has taken all the votes it may without an account: sign in to vote."),
            )
        row, _created = Vote.objects.update_or_create(
            debate=debate, phase=phase, voter=voter, defaults={"choice": choice, "user": user, "address": key}
        )
        _bump(debate.pk, joined=True)
    return row


def ask(debate: Debate, voter: str, text: str, *, user=None, address: str | None = None) -> FloorQuestion:
    """A question from the floor: plain text, one line, within MAX_QUESTION characters; a viewer
    asks at most once per QUESTION_INTERVAL and keeps at most QUESTIONS_PER_VIEWER open ones.
    Anonymous viewers from one `address` share one interval and a number of questions (hidden
    ones too: hiding one frees no slot), and the share link a number for all of them."""
    key = _key(voter, address)
    text = " ".join(strip_invisible(text or "").split())
    if not text:
        raise Refused(_("Write your question first."))
    if len(text) > MAX_QUESTION:
        raise Refused(_("%(count)d characters; at most %(max)d.") % {"count": len(text), "max": MAX_QUESTION})
    with transaction.atomic():
        Audience.objects.select_for_update().get_or_create(debate=debate)
        if not asks_open(debate):
            raise Refused(_("This debate takes no more questions."))
        mine = FloorQuestion.objects.filter(debate=debate, voter=voter)
        since = timezone.now() - timedelta(seconds=QUESTION_INTERVAL)
        if mine.filter(at__gt=since).exists():
            raise Refused(_("One question every %(n)d seconds: try again shortly.") % {"n": QUESTION_INTERVAL})
        if mine.filter(hidden=False, taken_at__isnull=True).count() >= QUESTIONS_PER_VIEWER:
            raise Refused(_("You have %(n)d open questions already.") % {"n": QUESTIONS_PER_VIEWER})
        asked = FloorQuestion.objects.filter(debate=debate)
        interval = settings.AGORA_AUDIENCE_ADDRESS_INTERVAL
        if key and asked.filter(address=key, at__gt=timezone.now() - timedelta(seconds=interval)).exists():
            raise Refused(_("One question from your network every %(n)d seconds: try again shortly.") % {"n": interval})
        _budget(
            voter,
            asked,
            key,
            settings.AGORA_AUDIENCE_QUESTIONS_PER_ADDRESS,
            settings.AGORA_AUDIENCE_QUESTIONS_PER_LINK,
            address_full=_("Too many questions from your network without an account: sign in to ask."),
            link_full=_("This share link has taken all the questions it may without an account: sign in to ask."),
        )
        question = FloorQuestion.objects.create(debate=debate, voter=voter, user=user, text=text, address=key)
        _bump(debate.pk, joined=True)
    return question


def upvote(debate: Debate, voter: str, question_id: int, *, address: str | None = None) -> bool:
    """One up-vote per viewer and question; False when it was there already. Anonymous up-votes
    on one question are counted per address and per share link, as votes are."""
    key = _key(voter, address)
    question = FloorQuestion.objects.filter(debate=debate, pk=question_id, hidden=False).first()
    if question is None:
        raise Refused(_("That question is not open."))
    try:
        with transaction.atomic():
            Audience.objects.select_for_update().get_or_create(debate=debate)
            given = FloorUpvote.objects.filter(question=question)
            if not given.filter(voter=voter).exists():
                _budget(
                    voter,
                    given,
                    key,
                    settings.AGORA_AUDIENCE_PER_ADDRESS,
                    settings.AGORA_AUDIENCE_PER_LINK,
                    address_full=_("Too many up-votes from your network without an account: sign in to up-vote."),
                    link_full=_(
                        "This share link has taken all the up-votes it may without an account: sign in to up-vote."
                    ),
                )
            FloorUpvote.objects.create(question=question, voter=voter, address=key)
            _bump(debate.pk)
    except IntegrityError:
        return False
    return True


def _top(debate: Debate) -> FloorQuestion | None:
    return open_questions(debate).first()


def chair_pick(debate: Debate) -> FloorQuestion | None:
    """The question the chair may take by itself: the open one with the most signed-in up-voters
    besides its asker, at least AGORA_AUDIENCE_CHAIR_UPVOTERS of them, never one from a viewer
    the owner hid a question of (or removed). Anonymous up-votes do not count: a client that drops
    its cookie, from as many addresses as it has, made the chair take "SYSTEM OVERRIDE…" with 40
    of them (issue 47). Accounts are made by the operator; the owner still takes any by hand."""
    hidden = FloorQuestion.objects.filter(debate=debate, hidden=True).values("voter")
    signed_in = Q(upvotes__voter__startswith="user:") & ~Q(upvotes__voter=F("voter"))
    return (
        FloorQuestion.objects.filter(debate=debate, hidden=False, taken_at__isnull=True)
        .exclude(voter__in=hidden)
        .annotate(vouched=Count("upvotes__voter", filter=signed_in, distinct=True))
        .filter(vouched__gte=settings.AGORA_AUDIENCE_CHAIR_UPVOTERS)
        .order_by("-vouched", "at", "id")
        .first()
    )


def take(debate: Debate, question_id: int | None = None, *, by: str = "owner") -> FloorQuestion:
    """Into the next round: the chosen question, or the top one (most up-votes, then the oldest);
    the chair (`by="chair"`) only its own pick (`chair_pick`)."""
    with transaction.atomic():
        Audience.objects.select_for_update().get_or_create(debate=debate)
        if not asks_open(debate):
            raise Refused(_("This debate takes no more questions."))
        if by == "chair":
            chosen = chair_pick(debate)
        elif question_id is None:
            chosen = _top(debate)
        else:
            chosen = open_questions(debate).filter(pk=question_id).first()
        if chosen is None:
            raise Refused(_("There is no open question to take."))
        FloorQuestion.objects.filter(pk=chosen.pk).update(taken_at=timezone.now(), taken_by=by)
        _bump(debate.pk)
    chosen.refresh_from_db()
    return chosen


def hide(debate: Debate, question_id: int, hidden: bool = True) -> None:
    with transaction.atomic():
        FloorQuestion.objects.filter(debate=debate, pk=question_id).update(hidden=hidden)
        _bump(debate.pk)


def remove_viewer(debate: Debate, voter: str) -> tuple[int, int]:
    """A vote-spamming viewer: their votes and up-votes go, their questions are hidden."""
    with transaction.atomic():
        votes = Vote.objects.filter(debate=debate, voter=voter).delete()[0]
        FloorUpvote.objects.filter(question__debate=debate, voter=voter).delete()
        questions = FloorQuestion.objects.filter(debate=debate, voter=voter).update(hidden=True)
        _bump(debate.pk)
    return votes, questions


def settle(debate: Debate, *, voting_closed: bool | None = None, chair_takes: bool | None = None) -> None:
    changes = {}
    if voting_closed is not None:
        changes["voting_closed"] = voting_closed
    if chair_takes is not None:
        changes["chair_takes"] = chair_takes and chair_may_take(debate)
    with transaction.atomic():
        Audience.objects.get_or_create(debate=debate)
        Audience.objects.filter(debate=debate).update(**changes)
        _bump(debate.pk)


def window(debate_id: int) -> tuple:
    """What of the public panel a debate's progress moves: the vote that is open, whether
    questions are taken, whether the report is in, and the sides."""
    # With its report (or its absence) in the same read: the window asks three times.
    debate = Debate.objects.select_related("report").get(pk=debate_id)
    state = state_of(debate)
    sides = tuple(s.key for s in options(debate, state=state))
    return (open_phase(debate, state), asks_open(debate), has_report(debate), sides)


def changed(debate_id: int, shown: tuple | None = None) -> tuple:
    """The debate's state moved (a phase began, the report came): if the windows moved with it
    (`shown`: the window last announced), every viewer is sent the panel again. Returns the
    window now. Most phases move nothing, and a debate nobody votes on would otherwise render its
    panel in every language at each of them."""
    with transaction.atomic():
        now = window(debate_id)
        if now != shown:
            _bump(debate_id)
    return now


# -- reading ---------------------------------------------------------------------------------------


def open_questions(debate: Debate):
    return (
        FloorQuestion.objects.filter(debate=debate, hidden=False, taken_at__isnull=True)
        .annotate(ups=Count("upvotes"))
        .order_by("-ups", "at", "id")
    )


def taken_questions(debate_id: int) -> list[FloorQuestion]:
    return list(
        FloorQuestion.objects.filter(debate_id=debate_id, hidden=False, taken_at__isnull=False).order_by("taken_at")
    )


def tallies(debate: Debate, state: Audience | None = None) -> dict[str, dict[str, int]]:
    counted = {Vote.Phase.BEFORE: {}, Vote.Phase.AFTER: {}}
    if state is not None and not state.participated:
        return {str(k): v for k, v in counted.items()}
    for row in Vote.objects.filter(debate=debate).values("phase", "choice").annotate(n=Count("id")):
        counted[row["phase"]][row["choice"]] = row["n"]
    return {str(k): v for k, v in counted.items()}


def results(debate: Debate, language: str | None = None, state: Audience | None = None) -> dict:
    """Before, after and the swing per side, in percentage points of the room (None where a
    phase has no votes): what the page, the report and the exports show."""
    counted = tallies(debate, state)
    sides = options(debate, language, state)
    totals = {phase: sum(counted[phase].get(s.key, 0) for s in sides) for phase in counted}
    rows = []
    for side in sides:
        row = {"key": side.key, "label": side.label}
        for phase in ("before", "after"):
            n = counted[phase].get(side.key, 0)
            row[phase] = n
            row[f"{phase}_percent"] = round(100 * n / totals[phase]) if totals[phase] else None
        both = row["before_percent"] is not None and row["after_percent"] is not None
        row["swing"] = row["after_percent"] - row["before_percent"] if both else None
        if row["swing"] is not None:  # "+18 points": percentage points of the room
            row["swing_text"] = ngettext("%(swing)s point", "%(swing)s points", abs(row["swing"])) % {
                "swing": f"{row['swing']:+d}"
            }
        rows.append(row)
    return {"sides": rows, "voters": totals}


def export(debate: Debate) -> dict | None:
    """The votes as the exports carry them (None: a debate without sides or votes); the sides'
    names in the language active (the exports': the debate's)."""
    drawn = results(debate)
    if not drawn["sides"] or not any(drawn["voters"].values()):
        return None
    return {
        "sides": [
            {k: row.get(k) for k in ("key", "label", "before", "after", "before_percent", "after_percent", "swing")}
            for row in drawn["sides"]
        ],
        "voters": drawn["voters"],
        "questions_taken": [q.text for q in taken_questions(debate.pk)],
    }


def public_context(debate: Debate, language: str | None = None) -> dict:
    """What every viewer of the debate sees alike (the part the frames carry)."""
    state = state_of(debate)
    phase = open_phase(debate, state)
    drawn = results(debate, language, state)
    joined = state.participated
    return {
        "debate": debate,
        "audience": state,
        "phase": phase,
        "sides": drawn["sides"],
        "voters": drawn["voters"],
        "questions": list(open_questions(debate)[:20]) if joined else [],
        "floor": taken_questions(debate.pk) if joined else [],
        "asks_open": asks_open(debate),
        "report_in": has_report(debate),
        "max_question": MAX_QUESTION,
        "chair_option": chair_may_take(debate),
        "chair_upvoters": settings.AGORA_AUDIENCE_CHAIR_UPVOTERS,  # the switch says the chair's rule
    }


def render_public(debate: Debate, oob: bool = False) -> str:
    return render_to_string(f"{PARTS}#public", {**public_context(debate), "oob": oob})


def page_context(request, debate: Debate, *, moderator: bool = False) -> dict:
    """The panel as the page draws it for this viewer: the public part, their own votes and, for
    the owner and staff, the moderation list."""
    context = public_context(debate)
    voter = voter_of(request) if context["audience"].participated else None
    mine = dict(Vote.objects.filter(debate=debate, voter=voter).values_list("phase", "choice")) if voter else {}
    labels = {s["key"]: s["label"] for s in context["sides"]}
    context.update(
        {
            "takes_votes": bool(context["sides"]),
            "mine": {phase: labels.get(choice, choice) for phase, choice in mine.items()},
            "moderator": moderator,
            "socket": context["phase"] == Vote.Phase.AFTER,
            "version": context["audience"].version,
        }
    )
    if moderator:
        context["moderation"] = moderation(debate, context["audience"])
    return context


def panel(request, debate: Debate) -> dict:
    """The live page's panel: its HTML ("" for a debate without an audience), the version it was
    drawn at (the socket's `audience=`), and whether a finished page opens the socket anyway (the
    "after" vote is open: the votes arrive live)."""
    context = page_context(request, debate, moderator=moderates(getattr(request, "user", None), debate))
    shown = context["takes_votes"] or context["asks_open"] or context["floor"]
    html = render_to_string(f"{PARTS}#panel", context, request=request) if shown else ""
    return {"html": html, "version": context["version"], "socket": context["socket"]}


def moderation(debate: Debate, state: Audience | None = None) -> dict:
    """For the owner and staff: every question (hidden ones too) and every viewer who took part."""
    from django.contrib.auth import get_user_model

    if state is not None and not state.participated:
        return {"questions": [], "viewers": []}
    questions = list(FloorQuestion.objects.filter(debate=debate).annotate(ups=Count("upvotes")).order_by("-at"))
    voters = {}
    for row in Vote.objects.filter(debate=debate).values("voter").annotate(n=Count("id")):
        voters.setdefault(row["voter"], {"votes": 0, "questions": 0})["votes"] = row["n"]
    for row in FloorQuestion.objects.filter(debate=debate).values("voter").annotate(n=Count("id")):
        voters.setdefault(row["voter"], {"votes": 0, "questions": 0})["questions"] = row["n"]
    user_ids = [int(v.split(":", 1)[1]) for v in voters if v.startswith("user:")]
    users = dict(get_user_model().objects.filter(pk__in=user_ids).values_list("pk", "username"))
    for q in questions:
        q.who = shown_voter(q.voter, users)
    return {
        "questions": questions,
        "viewers": [{"voter": v, "who": shown_voter(v, users), **n} for v, n in sorted(voters.items())],
    }


def announce(debate_id: int) -> None:
    """The public part, in each language watched, to every viewer (after the change's commit)."""
    layer = get_channel_layer()
    message = _message(debate_id, frames.watched(frames.groups(debate_id), layer, ask=True))
    if message is None:
        return
    for language, html in message["html"].items():
        async_to_sync(layer.group_send)(frames.group(debate_id, language), {**message, "html": html})


def _message(debate_id: int, languages: list[str]) -> dict | None:
    debate = Debate.objects.filter(pk=debate_id).first()
    if debate is None:
        return None
    version = Audience.objects.filter(debate_id=debate_id).values_list("version", flat=True).first() or 0
    html = frames.in_every_language(lambda: render_public(debate, oob=True), languages)
    return {"type": "debate.audience", "version": version, "html": html}


def current(debate_id: int, language: str, seen: int = -1) -> tuple[int, str]:
    """(version, the public part as an out-of-band swap) for one viewer's catch-up; the part is
    drawn only when newer than the `seen` version ("" otherwise: most joins have it already)."""
    from django.utils import translation

    version = Audience.objects.filter(debate_id=debate_id).values_list("version", flat=True).first() or 0
    if version <= seen:
        return version, ""
    debate = Debate.objects.get(pk=debate_id)
    with translation.override(language):
        return version, render_public(debate, oob=True)


async def announce_changed(debate_id: int, shown: tuple | None = None) -> tuple:
    """From the running debate's sink (async): a phase began or the report came."""
    return await database_sync_to_async(changed)(debate_id, shown)


# -- the engine's side -----------------------------------------------------------------------------


def chair_take(debate_id: int) -> str | None:
    state = Audience.objects.filter(debate_id=debate_id, chair_takes=True).first()
    if state is None:
        return None
    try:
        return take(Debate.objects.get(pk=debate_id), by="chair").text
    except Refused:
        return None


class FloorSource:
    """`DebateSpec.floor` for a debate: the engine reads the questions taken so far (and the
    moderated chair takes one) through it, never touching Django itself."""

    def __init__(self, debate_id: int) -> None:
        self.debate_id = debate_id

    async def taken(self) -> list[str]:
        return [q.text for q in await database_sync_to_async(taken_questions)(self.debate_id)]

    async def chair_take(self) -> str | None:
        return await database_sync_to_async(chair_take)(self.debate_id)


def moderates(user, debate: Debate) -> bool:
    """The owner (and whoever controls the debate), and staff who see every debate."""
    return can_control(user, debate) or sees_everything(user)
