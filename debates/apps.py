from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DebatesConfig(AppConfig):
    name = "debates"
    verbose_name = _("Debates")
