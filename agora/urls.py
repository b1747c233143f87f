from django.contrib import admin
from django.urls import include, path

from agora.setup import Login, setup

urlpatterns = [
    path("setup/<str:token>/", setup, name="setup"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("accounts/login/", Login.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("debates.urls")),
]
