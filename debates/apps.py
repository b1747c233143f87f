from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DebatesConfig(AppConfig):
    name = "debates"
    verbose_name = _("Debates")

    def ready(self):
        # A persona library is for one of the engine's formats; personas imports nothing of
        # debates, so the registry is handed to it here (see `personas.models.offer_formats`).
        from debates.engine import registry
        from personas.models import offer_formats

        offer_formats(registry.choices)
