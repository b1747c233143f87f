"""The first account, without a terminal detour: the setup link `make run` prints (like Jupyter's
token link) opens a form that creates the installation's owner as a superuser and signs them in."""

from django.contrib.auth import get_user_model, login
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.views import LoginView
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from agora.errors import NotFound
from agora.models import SetupToken


def no_account_yet() -> bool:
    return not get_user_model().objects.exists()


class OwnerForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username",)


def setup(request, token: str):
    # Once an account exists the link is spent, whoever holds it; a wrong token reveals nothing.
    if not no_account_yet() or not SetupToken.matches(token):
        raise NotFound(_("This setup link is not valid (any more). Log in, or ask for a new link."))
    form = OwnerForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            if not no_account_yet():  # two tabs racing: the first one wins
                raise NotFound(_("This setup link is not valid (any more). Log in, or ask for a new link."))
            user = form.save(commit=False)
            user.is_staff = user.is_superuser = True
            user.save()
            SetupToken.objects.all().delete()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("debates:new")
    return render(request, "agora/setup.html", {"form": form})


class Login(LoginView):
    """Django's login page, which also says what to do when no account exists yet."""

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), "no_account_yet": no_account_yet()}
