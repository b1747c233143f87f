from django.urls import path

from debates.as_model import views

app_name = "openai"
urlpatterns = [
    path("models", views.models, name="models"),
    path("models/<path:model_id>", views.model, name="model"),
    path("chat/completions", views.chat_completions, name="chat_completions"),
]
