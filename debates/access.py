"""Who may see a debate: its owner, staff, anyone for an ownerless (command-line) debate, and
holders of the share link once the owner shares it. Everyone else gets a 404, over HTTP, exports
and the WebSocket alike, so a private debate's existence is not revealed either."""

from django.http import Http404

from debates.models import Debate


def can_view(user, debate: Debate, share_token: str | None = None) -> bool:
    if debate.owner_id is None:
        return True
    if user is not None and user.is_authenticated and (user.pk == debate.owner_id or user.is_staff):
        return True
    return bool(debate.shared and share_token and share_token == debate.share_token)


def can_control(user, debate: Debate) -> bool:
    """Stop, resume, answer the checkpoint, share: the owner (or staff) only."""
    if debate.owner_id is None:
        return True
    return user is not None and user.is_authenticated and (user.pk == debate.owner_id or user.is_staff)


def viewable_debate(scope_or_request, debate_id: int, share_token: str | None = None) -> Debate:
    user = getattr(scope_or_request, "user", None)
    if user is None and isinstance(scope_or_request, dict):
        user = scope_or_request.get("user")
    debate = Debate.objects.filter(pk=debate_id).first()
    if debate is None or not can_view(user, debate, share_token):
        raise Http404("No such debate.")
    return debate
