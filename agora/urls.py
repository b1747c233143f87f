from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from agora.favicon import favicon
from agora.setup import Login, old_setup_link, setup
from debates.api import pages as api_pages
from debates.api.routes import api

# The product's name, the same in every language (Django's default reads "Django administration").
admin.site.site_header = admin.site.site_title = "Agora"

urlpatterns = [
    path("favicon.ico", favicon),
    path("setup/", setup, name="setup"),
    path("setup/<str:token>/", old_setup_link),
    path("i18n/", include("django.conf.urls.i18n")),
    # "Persona libraries" (the app's heading in the admin, its breadcrumbs) opens the libraries.
    path("admin/personas/", RedirectView.as_view(pattern_name="admin:personas_library_changelist")),
    path("admin/", admin.site.urls),
    path("accounts/login/", Login.as_view(), name="login"),
    path("accounts/tokens/", api_pages.token_list, name="api_tokens"),
    path("accounts/tokens/<int:pk>/revoke/", api_pages.revoke, name="api_token_revoke"),
    path("api/v1/", api.urls),
    # A debate as a model, for chat clients on OpenAI's API (debates/as_model, docs/openai-door.md).
    path("openai/v1/", include("debates.as_model.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("debates.urls")),
]
