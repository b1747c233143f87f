# The audience's "someone voted or asked" flag (debates/models.py), set where it is already true.
from django.db import migrations, models


def mark(apps, schema_editor):
    Audience = apps.get_model("debates", "Audience")
    Vote = apps.get_model("debates", "Vote")
    FloorQuestion = apps.get_model("debates", "FloorQuestion")
    for rows in (Vote.objects, FloorQuestion.objects):  # in the database: no ids through Python
        Audience.objects.filter(debate_id__in=rows.values("debate_id")).update(participated=True)


class Migration(migrations.Migration):
    dependencies = [("debates", "0025_replay_timeline")]

    operations = [
        migrations.AddField(model_name="audience", name="participated", field=models.BooleanField(default=False)),
        migrations.RunPython(mark, migrations.RunPython.noop),
    ]
