from django.urls import path

from debates import views

app_name = "debates"
urlpatterns = [
    path("", views.home, name="home"),
]
