"""Debates stored before formats had their own options kept every start-form field (a duel kept
research_budget, a panel rounds…); each format's Options now refuses keys it does not know, so drop
them. The key sets are written out here as they were at this migration, on purpose: a migration
must not change meaning when a format's options change later."""

from django.db import migrations

COMMON = {"evidence", "user_context", "max_tokens", "temperature"}
KEYS = {
    "duel": COMMON | {"rounds"},
    "panel": COMMON | {"research_budget", "token_budget", "proposition_type"},
    "roundtable": COMMON | {"mode", "no_interrupt", "force"},
    "moderated": COMMON | {"mode", "rounds", "token_budget", "max_chars"},
}


def keep_own_options(apps, schema_editor):
    Debate = apps.get_model("debates", "Debate")
    for debate in Debate.objects.exclude(options={}).only("pk", "format", "options"):
        allowed = KEYS.get(debate.format)
        if allowed is None:
            continue
        kept = {k: v for k, v in debate.options.items() if k in allowed}
        if kept != debate.options:
            Debate.objects.filter(pk=debate.pk).update(options=kept)


class Migration(migrations.Migration):
    dependencies = [("debates", "0004_formats_from_the_registry")]
    operations = [migrations.RunPython(keep_own_options, migrations.RunPython.noop)]
