"""`{% model_note %}`: which model new debates run on, said plainly (the one chosen with "Use this
model", the server's, or the bundled demo), with the way to connect or change it for those who may."""

from django import template

from debates import default_model

register = template.Library()


@register.inclusion_tag("debates/_model_note.html", takes_context=True)
def model_note(context):
    from debates.connect import may_connect

    user = context.get("user")
    running = default_model.running()
    return {
        "bundled": running.bundled,
        "name": default_model.BUNDLED_MODEL,
        "running": running.label,
        "can_connect": bool(user and user.is_authenticated and may_connect(user)),
    }
