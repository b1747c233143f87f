# Another user's seat becomes an invitation they accept or decline (issue 24 #15). Seats given to
# another user before this had nobody's consent: they become pending invitations, so those debates
# leave the invitees' lists until they accept.

from django.db import migrations, models


def invitations_from_old_seats(apps, schema_editor):
    Seat = apps.get_model("debates", "Seat")
    for seat in Seat.objects.filter(human__isnull=False).select_related("debate", "human"):
        if seat.human_id != seat.debate.owner_id:
            seat.invitation, seat.invited_name = "pending", seat.human.username
            seat.save(update_fields=["invitation", "invited_name"])


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0017_provider_approval"),
    ]

    operations = [
        migrations.AddField(
            model_name="seat",
            name="invitation",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "none (the owner's own seat, or a model's)"),
                    ("pending", "invited, no answer yet"),
                    ("accepted", "accepted"),
                    ("declined", "declined"),
                    ("left", "left the seat"),
                    ("withdrawn", "invitation withdrawn"),
                ],
                default="",
                max_length=10,
                verbose_name="invitation",
            ),
        ),
        migrations.AddField(
            model_name="seat",
            name="invited_name",
            field=models.CharField(blank=True, max_length=150, verbose_name="invited user name"),
        ),
        migrations.RunPython(invitations_from_old_seats, migrations.RunPython.noop),
    ]
