# Replay (#30): when each turn's text arrived, so a finished debate plays back at its own pace.
# Its operations are written by hand with the model field (debates/models.py).
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("debates", "0024_audience")]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="pace",
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
