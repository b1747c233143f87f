"""A turn keeps its speaker's English name beside the name (each reader sees the one of their
language), filled for turns already spoken from the personas' English names; an API token keeps
the language its owner used the site in when it was made (the API answers in it by default)."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def fill(apps, schema_editor):
    Turn = apps.get_model("debates", "Turn")
    Persona = apps.get_model("personas", "Persona")
    english = Persona.objects.filter(slug=OuterRef("speaker_slug")).exclude(name_en="").values("name_en")[:1]
    Turn.objects.filter(speaker_name_en="", speaker_slug__in=Persona.objects.exclude(name_en="").values("slug")).update(
        speaker_name_en=Subquery(english)
    )


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0021_provider_stored_key"),
        ("personas", "0005_bundled_english_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="speaker_name_en",
            field=models.CharField(blank=True, max_length=120),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="language",
            field=models.CharField(
                blank=True,
                help_text="The API answers in this language when a request asks for none (Accept-Language).",
                max_length=10,
                verbose_name="language",
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
