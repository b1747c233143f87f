# L3 characters distilled from real people (issue 28, item 6): the "distilled" source, who had one
# made and when, and what it rests on.
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("personas", "0005_domaintemplate_name_en"),
    ]

    operations = [
        migrations.AlterField(
            model_name="persona",
            name="source",
            field=models.CharField(
                choices=[("bundled", "Bundled"), ("external-import", "External import"), ("distilled", "Distilled")],
                default="bundled",
                max_length=40,
                verbose_name="source",
            ),
        ),
        migrations.AddField(
            model_name="persona",
            name="distilled_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="distilled by",
            ),
        ),
        migrations.AddField(
            model_name="persona",
            name="distilled_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="distilled at"),
        ),
        migrations.AddField(
            model_name="persona",
            name="sources",
            field=models.TextField(blank=True, verbose_name="sources"),
        ),
    ]
