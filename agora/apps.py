from django.apps import AppConfig


class AgoraConfig(AppConfig):
    name = "agora"

    def ready(self):
        from agora import checks  # noqa: F401  (registers the system checks)
