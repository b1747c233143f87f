"""`{% model_note %}`: what the debates run on, said plainly (the bundled model is a demo), with
the way to connect a real one for those who may."""

from django import template
from django.conf import settings

from debates.forms import BUNDLED_MODEL

register = template.Library()


@register.inclusion_tag("debates/_model_note.html", takes_context=True)
def model_note(context):
    from debates.connect import may_connect

    user = context.get("user")
    return {
        "bundled": not settings.OPENAI_BASE_URL and not settings.AGORA_LOCAL_MODEL,
        "name": BUNDLED_MODEL,
        "can_connect": bool(user and user.is_authenticated and may_connect(user)),
    }
