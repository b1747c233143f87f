"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agora.settings")
# Initialise Django before importing anything that touches models (consumers, routing).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from agora.body_limit import BodyLimitMiddleware, install_in_daphne  # noqa: E402
from agora.page_threads import shared  # noqa: E402
from agora.plain_frame_logs import install as plain_frame_logs  # noqa: E402
from agora.prompt_writes import install as prompt_writes  # noqa: E402
from agora.ws_auth import DeferredAuthMiddlewareStack  # noqa: E402
from debates.api.live_tokens import EndsWithItsToken  # noqa: E402
from debates.control import attach_to_daphne  # noqa: E402
from debates.mcp.http import WithMcp  # noqa: E402
from debates.routing import websocket_urlpatterns  # noqa: E402
from debates.runner import ServerLoopMiddleware  # noqa: E402
from debates.warm import warm_up  # noqa: E402

# What the first debate would load on the server loop, while viewers wait for frames.
warm_up()

application = ServerLoopMiddleware(
    ProtocolTypeRouter(
        {
            # /mcp/: the MCP server (streamable HTTP) behind the API tokens; the rest is Django's,
            # on AGORA_PAGE_THREADS shared threads (agora/page_threads.py).
            # A request with an API token ends when its token is revoked (debates/api/live_tokens.py).
            "http": BodyLimitMiddleware(
                EndsWithItsToken(WithMcp(shared(django_asgi_app, settings.AGORA_PAGE_THREADS)))
            ),
            # The user is read by the consumer after it accepts (agora/ws_auth.py).
            "websocket": AllowedHostsOriginValidator(DeferredAuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)

# Under daphne, refuse a body past its limit while it arrives, before daphne holds it in memory
# (BodyLimitMiddleware above is the same rule for any other server).
install_in_daphne()
# Under daphne, resume debates a crash interrupted as soon as the server loop runs.
attach_to_daphne()
# Under daphne, autobahn's per-frame debug-log arguments built without colour codes (agora/plain_frame_logs.py).
plain_frame_logs()
# Under daphne, a frame goes to its socket at once when nothing is queued before it (agora/prompt_writes.py).
prompt_writes()
