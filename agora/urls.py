from django.contrib import admin
from django.urls import include, path

from agora.setup import Login, setup

# The product's name, the same in every language (Django's default reads "Django administration").
admin.site.site_header = admin.site.site_title = "Agora"

urlpatterns = [
    path("setup/<str:token>/", setup, name="setup"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("accounts/login/", Login.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("debates.urls")),
]
