# The live audience (#30): votes and questions from the floor. Its operations are written by hand
# with the models (debates/models.py).
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0023_distillations"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Audience",
            fields=[
                (
                    "debate",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="audience",
                        serialize=False,
                        to="debates.debate",
                    ),
                ),
                ("version", models.PositiveIntegerField(default=0)),
                ("voting_closed", models.BooleanField(default=False, verbose_name="voting closed")),
                ("chair_takes", models.BooleanField(default=False, verbose_name="the chair takes questions")),
                ("sides", models.JSONField(blank=True, default=list)),
            ],
            options={"verbose_name": "audience", "verbose_name_plural": "audiences"},
        ),
        migrations.CreateModel(
            name="Vote",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("phase", models.CharField(choices=[("before", "before"), ("after", "after")], max_length=6)),
                ("choice", models.CharField(max_length=100)),
                ("voter", models.CharField(max_length=64)),
                ("at", models.DateTimeField(auto_now=True)),
                (
                    "debate",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="votes", to="debates.debate"
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "vote",
                "verbose_name_plural": "votes",
                "constraints": [
                    models.UniqueConstraint(fields=("debate", "phase", "voter"), name="one_vote_per_phase")
                ],
            },
        ),
        migrations.CreateModel(
            name="FloorQuestion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("voter", models.CharField(max_length=64)),
                ("text", models.CharField(max_length=300)),
                ("at", models.DateTimeField(auto_now_add=True)),
                ("hidden", models.BooleanField(default=False)),
                ("taken_at", models.DateTimeField(blank=True, null=True)),
                ("taken_by", models.CharField(blank=True, max_length=10)),
                (
                    "debate",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="floor_questions",
                        to="debates.debate",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "question from the floor",
                "verbose_name_plural": "questions from the floor",
                "ordering": ["at", "id"],
            },
        ),
        migrations.CreateModel(
            name="FloorUpvote",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("voter", models.CharField(max_length=64)),
                (
                    "question",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="upvotes",
                        to="debates.floorquestion",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("question", "voter"), name="one_upvote_per_viewer")]
            },
        ),
    ]
