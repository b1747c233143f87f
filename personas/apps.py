from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PersonasConfig(AppConfig):
    name = "personas"
    verbose_name = _("Persona libraries")
