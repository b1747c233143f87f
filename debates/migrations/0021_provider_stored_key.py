from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("debates", "0020_running_seconds")]

    operations = [
        migrations.AddField(
            model_name="provider",
            name="api_key_sealed",
            field=models.TextField(blank=True, default="", editable=False, verbose_name="stored key (encrypted)"),
        ),
        migrations.AlterField(
            model_name="provider",
            name="default_model",
            field=models.CharField(blank=True, max_length=120, verbose_name="default model"),
        ),
    ]
