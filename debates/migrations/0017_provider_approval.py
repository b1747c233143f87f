# Providers wait for a superuser's approval once staff who are not superusers add or re-point them.
# Rows that exist already stay offered (approved, by nobody on record), as they were before.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("debates", "0016_api_tokens"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="provider",
            name="approved",
            field=models.BooleanField(
                default=True,
                help_text="Offered on the start form and used by debates only once a superuser approves it.",
                verbose_name="approved",
            ),
        ),
        migrations.AddField(
            model_name="provider",
            name="approved_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="approved by",
            ),
        ),
    ]
