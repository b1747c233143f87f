from axes.apps import AppConfig as AxesAppConfig
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop
from django_tasks_db.apps import TasksAppConfig


class AgoraConfig(AppConfig):
    default = True  # this module holds two configs: "agora" in INSTALLED_APPS means this one
    name = "agora"

    def ready(self):
        from agora import checks  # noqa: F401  (registers the system checks)


class TasksConfig(TasksAppConfig):
    """django_tasks_db under a name people read, in their language (its own is "Tasks Database
    Backend", English only). The label stays the app's, so its tables and migrations are unchanged."""

    verbose_name = _("Tasks")


class AxesConfig(AxesAppConfig):
    """django-axes (sign-in throttling, agora/login_throttle.py) under a name people read, in their
    language (its own is its label, "Axes"). The label stays the app's."""

    verbose_name = _("Sign-in throttling")


# Texts of other packages that no catalogue of theirs translates into Chinese: django_tasks_db's
# model names (it ships no catalogue), django-axes' (it has no Chinese one), and the admin index's
# headings for screen readers (new in Django 5.2, not yet in its zh_Hans catalogue). Marked here so
# that ours, which Django reads first, holds them.
THIRD_PARTY_MSGIDS = (
    gettext_noop("Task Result"),
    gettext_noop("Task Results"),
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
)
