"""Who may see and control a debate.

- Its owner sees and controls it.
- Holders of the `debates.view_all_debates` permission (and superusers) see every debate and
  control the ownerless ones (started at the terminal); being staff alone grants nothing.
- A visitor with the owner's current share link sees it, read-only, while it is shared.
- A person the owner seated at the table sees it, and writes their own turns: the owner in a seat
  of their own, or another user once they accepted the invitation (`debates.invitations`). A
  pending invitation shows the invitee only its question, inviter and seat, on their home page.
Everyone else gets a 404, over HTTP, exports and the WebSocket alike, so a private debate's
existence is not revealed either.

Opening the share link (`?share=<token>`) records the grant, with its token, in the visitor's
session, so the export links and the WebSocket work without carrying it; a grant whose token is no
longer the debate's (revoked, or shared again under a new link) is worth nothing.
"""

from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from debates.models import Debate, Invitation

SESSION_KEY = "agora_share_grants"
VIEW_ALL = "debates.view_all_debates"


def _signed_in(user) -> bool:
    return user is not None and user.is_authenticated


def shows_internals(user) -> bool:
    """Staff see provider addresses in errors; everyone else sees "the provider"."""
    return bool(user and user.is_authenticated and user.is_staff)


def sees_everything(user) -> bool:
    return _signed_in(user) and user.has_perm(VIEW_ALL)


def is_owner(user, debate: Debate) -> bool:
    return _signed_in(user) and debate.owner_id is not None and user.pk == debate.owner_id


def by_share(debate: Debate, share_token: str | None = None, grants=None) -> bool:
    if not debate.shared:
        return False
    if share_token and share_token == debate.share_token:
        return True
    return bool(grants) and grants.get(str(debate.pk)) == debate.share_token


# The seats whose person is at the table: their own, or an accepted invitation.
PRESENT = (Invitation.NONE, Invitation.ACCEPTED)


def seated(user, debate: Debate) -> bool:
    """A person at the table (they write that seat's turns): not one merely invited."""
    return _signed_in(user) and debate.seats.filter(human_id=user.pk, invitation__in=PRESENT).exists()


def can_view(user, debate: Debate, share_token: str | None = None, grants=None) -> bool:
    return (
        is_owner(user, debate) or sees_everything(user) or by_share(debate, share_token, grants) or seated(user, debate)
    )


def can_control(user, debate: Debate) -> bool:
    """Stop, resume, retry, answer the checkpoint, share."""
    if debate.owner_id is None:
        return sees_everything(user)
    return is_owner(user, debate) or (_signed_in(user) and user.is_superuser)


def visible_debates(user) -> QuerySet:
    """The debates a user's home page lists: their own, or every one with the permission."""
    debates = Debate.objects.all()
    if sees_everything(user):
        return debates
    if _signed_in(user):
        return debates.filter(Q(owner=user) | Q(seats__human=user, seats__invitation__in=PRESENT)).distinct()
    return debates.none()


def _user_and_session(scope_or_request):
    if isinstance(scope_or_request, dict):  # a Channels scope
        return scope_or_request.get("user"), scope_or_request.get("session")
    return getattr(scope_or_request, "user", None), getattr(scope_or_request, "session", None)


def viewable_debate(scope_or_request, debate_id: int, share_token: str | None = None) -> Debate:
    user, session = _user_and_session(scope_or_request)
    grants = dict(session.get(SESSION_KEY, {})) if session is not None else {}
    debate = Debate.objects.filter(pk=debate_id).first()
    if debate is None or not can_view(user, debate, share_token, grants):
        raise Http404(_("No such debate."))
    if share_token and share_token == debate.share_token and session is not None:
        if grants.get(str(debate.pk)) != share_token:
            session[SESSION_KEY] = {**grants, str(debate.pk): share_token}
    return debate


def via_share_only(scope_or_request, debate: Debate) -> bool:
    """Whether this viewer sees the debate only thanks to its share link (so revoking ends it)."""
    user, _session = _user_and_session(scope_or_request)
    return not (is_owner(user, debate) or sees_everything(user))
