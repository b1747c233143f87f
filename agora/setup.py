"""The first account, without a terminal detour: the setup link `make run` prints (like Jupyter's
token link) opens a form that creates the installation's owner as a superuser and signs them in.

The link carries its code after `#` (`/setup/#<code>`): browsers never send the fragment, so the
code is in no request line and no access log (daphne's, a proxy's); the page's script copies it
into the form, which posts it. Without script the person pastes the code the command also prints.
The code is claimed by deleting its row in the transaction that creates the account: of several
simultaneous uses exactly one deletes it, and only that one creates an account.
"""

from django import forms
from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.views import LoginView
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agora.errors import NotFound
from agora.models import SetupToken


def no_account_yet() -> bool:
    return not get_user_model().objects.exists()


def spent() -> NotFound:
    return NotFound(_("This setup link is not valid (any more). Log in, or ask for a new link."))


class OwnerForm(UserCreationForm):
    code = forms.CharField(
        label=gettext_lazy("Setup code"),
        max_length=100,
        strip=True,
        help_text=gettext_lazy(
            "Filled in from the setup link. Without JavaScript, paste the part of the link after #."
        ),
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )

    field_order = ["code", "username", "password1", "password2"]

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username",)


class _Spent(Exception):
    pass


def setup(request):
    # Once an account exists the link is spent, whoever holds it; a wrong code reveals nothing.
    if not no_account_yet():
        raise spent()
    form = OwnerForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                # The claim comes first and decides: a second use (another tab, a replay) deletes
                # nothing, and its transaction creates nothing.
                if not SetupToken.claim(form.cleaned_data["code"]) or not no_account_yet():
                    raise _Spent
                user = form.save(commit=False)
                user.is_staff = user.is_superuser = True
                user.save()
                SetupToken.objects.all().delete()
        except _Spent:
            if not no_account_yet():  # two tabs racing: the first one won
                raise spent() from None
            form.add_error(
                "code",
                _("This setup code is not valid (any more). Run .venv/bin/python manage.py setup_link for a new link."),
            )
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("debates:new")
    return render(request, "agora/setup.html", {"form": form})


def old_setup_link(request, token: str):
    """A link with the code in its path (as printed before): that request line is in an access
    log by now, so its code is spent here and the page says to ask for a new link."""
    SetupToken.claim(token)
    raise spent()


class Login(LoginView):
    """Django's login page, which also says what to do when no account exists yet."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "no_account_yet": no_account_yet()}
