"""Keys sealed before keys were bound to an origin (scheme, host and port) named their host alone,
which no origin equals, so they would have to be entered again. A row whose address is still on
that host has its key sealed again for that address's origin (narrower than the host-only seal it
had); a row moved to another host keeps the old seal, which is sent nowhere (key_vault.open_sealed)."""

from django.db import migrations


def rebind(apps, schema_editor):
    from debates import key_vault

    Provider = apps.get_model("debates", "Provider")
    for provider in Provider.objects.exclude(api_key_sealed="").only("pk", "base_url", "api_key_sealed"):
        token = key_vault.rebind_to_origin(provider.api_key_sealed, provider.base_url)
        if token is not None:
            Provider.objects.filter(pk=provider.pk).update(api_key_sealed=token)


class Migration(migrations.Migration):
    dependencies = [("debates", "0029_api_token_scope")]

    operations = [migrations.RunPython(rebind, migrations.RunPython.noop)]
