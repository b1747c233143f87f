"""Who may see a debate: its owner, staff, anyone for an ownerless (command-line) debate, and a
visitor who opened the owner's share link while it is shared. Everyone else gets a 404, over
HTTP, exports and the WebSocket alike, so a private debate's existence is not revealed either.

Opening the share link (`?share=<token>`) records the grant in the visitor's session, so the
export links and the WebSocket work without carrying the token.
"""

from django.http import Http404
from django.utils.translation import gettext as _

from debates.models import Debate

SESSION_KEY = "agora_shared_debates"


def can_view(user, debate: Debate, share_token: str | None = None, granted=()) -> bool:
    if debate.owner_id is None:
        return True
    if user is not None and user.is_authenticated and (user.pk == debate.owner_id or user.is_staff):
        return True
    if not debate.shared:
        return False
    return bool(share_token and share_token == debate.share_token) or debate.pk in granted


def can_control(user, debate: Debate) -> bool:
    """Stop, resume, answer the checkpoint, share: the owner (or staff) only."""
    if debate.owner_id is None:
        return True
    return user is not None and user.is_authenticated and (user.pk == debate.owner_id or user.is_staff)


def _user_and_session(scope_or_request):
    if isinstance(scope_or_request, dict):  # a Channels scope
        return scope_or_request.get("user"), scope_or_request.get("session")
    return getattr(scope_or_request, "user", None), getattr(scope_or_request, "session", None)


def viewable_debate(scope_or_request, debate_id: int, share_token: str | None = None) -> Debate:
    user, session = _user_and_session(scope_or_request)
    granted = set(session.get(SESSION_KEY, [])) if session is not None else set()
    debate = Debate.objects.filter(pk=debate_id).first()
    if debate is None or not can_view(user, debate, share_token, granted):
        raise Http404(_("No such debate."))
    if share_token and share_token == debate.share_token and session is not None and debate.pk not in granted:
        session[SESSION_KEY] = sorted(granted | {debate.pk})
    return debate
