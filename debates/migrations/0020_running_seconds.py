from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("debates", "0019_reasoning")]

    operations = [
        migrations.AddField(
            model_name="debate",
            name="running_seconds",
            field=models.FloatField(default=0.0),
        ),
    ]
