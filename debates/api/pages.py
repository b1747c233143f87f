"""The signed-in user's API tokens page (`/accounts/tokens/`): list, create, revoke."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from debates.api import tokens


class TokenForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("Name"),
        max_length=100,
        help_text=gettext_lazy("What the token is for, e.g. the script that uses it."),
    )
    read_only = forms.BooleanField(
        label=gettext_lazy("Read only"),
        required=False,
        help_text=gettext_lazy("For a dashboard or an MCP client that only reads: it cannot start, stop or delete."),
    )


@login_required
def token_list(request):
    form = TokenForm(request.POST or None)
    made = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        _row, made = tokens.issue(request.user, data["name"].strip(), read_only=data["read_only"])
        form = TokenForm()
    context = {
        "form": form,
        "made": made,
        "tokens": request.user.api_tokens.all(),
        "base": request.build_absolute_uri("/").rstrip("/"),  # where this server is reached from here
    }
    # The page that shows a new token is never cached: it is the only time the token is shown.
    response = render(request, "accounts/tokens.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def revoke(request, pk):
    if tokens.revoke(request.user, pk):
        messages.success(request, _("The token is revoked: it opens nothing any more."))
    return redirect("api_tokens")
