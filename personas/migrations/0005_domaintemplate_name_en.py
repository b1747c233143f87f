from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("personas", "0005_bundled_english_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="domaintemplate",
            name="name_en",
            field=models.CharField(blank=True, max_length=200, verbose_name="English name"),
        ),
    ]
