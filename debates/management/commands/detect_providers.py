"""`manage.py detect_providers`: offer a local Ollama (OLLAMA_HOST, default 127.0.0.1:11434) as a
provider when one answers. `make run` runs it; it is quiet and quick when none does."""

from django.core.management.base import BaseCommand

from debates.provider_tools import detect_ollama, ollama_base_url


class Command(BaseCommand):
    help = "Find a local Ollama server and add it as a provider (with its models)."

    def handle(self, *args, **options):
        provider = detect_ollama()
        if provider is None:
            self.stdout.write(f"No Ollama at {ollama_base_url()} (set OLLAMA_HOST if it runs elsewhere).")
        else:
            models = ", ".join(provider.offered_models) or "no models yet"
            self.stdout.write(f"Ollama found at {provider.base_url}: provider “{provider.name}” ({models}).")
