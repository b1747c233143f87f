"""Agora settings: one module, read from environment variables.

Every value has a safe development default so `make run` works on a fresh machine with nothing
set; `agora.checks` warns when a default is unsafe for production. The README lists every variable.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent


TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    """A yes/no variable. A value that is neither (DEBUG=flase) stops start-up with the reason, as
    a typo must not silently mean "off" (or "on") for a security setting."""
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"{name}={value!r}: use one of 1/0, true/false, yes/no, on/off")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# The development key is public on purpose; agora.checks refuses to stay quiet about it.
DEFAULT_SECRET_KEY = "agora-insecure-development-key-change-me"
SECRET_KEY = os.environ.get("SECRET_KEY", DEFAULT_SECRET_KEY)
DEBUG = env_bool("DEBUG", True)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# Behind a TLS-terminating reverse proxy that sets X-Forwarded-Proto: trust it, send cookies over
# HTTPS only, redirect plain HTTP (but the health probe) and tell browsers to stay on HTTPS (HSTS).
BEHIND_HTTPS_PROXY = env_bool("BEHIND_HTTPS_PROXY", False)
if BEHIND_HTTPS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # Preloading commits the whole domain to HTTPS in browsers for months: the operator's call.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# A Content-Security-Policy on every response, in development too (so an inline script fails in
# the tests, not in production). No inline script or style anywhere; the live page's WebSocket
# is same-origin ('self' covers ws:/wss: of this host). The setting has the shape of Django 6's
# SECURE_CSP, whose middleware replaces ours there (agora/security.py).
SECURE_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "font-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}

INSTALLED_APPS = [
    # daphne first: its runserver replaces Django's, so development serves ASGI and WebSockets.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",  # the API's docs page, from its own static files (no CDN)
    "django_tasks",
    "agora.apps.TasksConfig",  # django_tasks_db, under a translated name in the admin
    "agora.apps.AxesConfig",  # django-axes: login throttling (agora/login_throttle.py)
    "agora",
    "personas",
    "debates",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "agora.security.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "agora.errors.FriendlyErrorsMiddleware",
    # Last, as axes asks: turns a refused sign-in into its page (agora/login_throttle.py).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "agora.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = None
ASGI_APPLICATION = "agora.asgi.application"

# SQLite by default; DATABASE_URL (e.g. postgres://user:pass@host/db) switches engines.
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DATABASE_POOL", True):
    # psycopg's pool: each process keeps a few connections and lends one to whichever thread needs
    # it, so the many short-lived threads of daphne and a worker neither reconnect per unit of work
    # nor pile up idle connections (max_size caps each process; size max_connections for it).
    # Django refuses a pool with persistent connections; say which to drop rather than guess.
    if DATABASES["default"]["CONN_MAX_AGE"] != 0:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"DATABASE_CONN_MAX_AGE={DATABASES['default']['CONN_MAX_AGE']} with the connection pool on "
            "(PostgreSQL's default): unset DATABASE_CONN_MAX_AGE to use the pool, or set DATABASE_POOL=0 "
            "to keep persistent connections instead."
        )
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": int(os.environ.get("DATABASE_POOL_MIN", "2")),
        "max_size": int(os.environ.get("DATABASE_POOL_MAX", "20")),
        # Seconds a thread waits for a free connection before its query fails.
        "timeout": float(os.environ.get("DATABASE_POOL_TIMEOUT", "30")),
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the live page read while the debate runner writes. synchronous=NORMAL is WAL's
    # recommended pairing: a commit survives a crash of the process (kill -9) and costs no fsync
    # (only a power loss can undo the last commits); with FULL every 40 ms frame waited ~3 ms on
    # the disk, on the one thread all database work shares (bench/README.md).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
    # A SQLite connection is only a file handle: keep it. Closing after every unit of work (the
    # default max age 0) reopened it per frame, and closing the last one checkpoints the WAL (~20 ms).
    if "DATABASE_CONN_MAX_AGE" not in os.environ:
        DATABASES["default"]["CONN_MAX_AGE"] = None

# In-process channel layer by default; REDIS_URL switches to Redis's publish/subscribe (channels-redis's
# layer with confirmed joins, agora/channel_layers.py) for many processes.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "agora.channel_layers.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "agora.channel_layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = os.environ.get("LANGUAGE_CODE", "zh-hans")
LANGUAGES = [("zh-hans", _("Simplified Chinese")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# Login throttling (django-axes; agora/login_throttle.py): each wrong password runs the password
# hasher, about 0.3 s of CPU, so unthrottled guessing slows every page. Failures are counted per
# username at an address and per address (never per username alone: guesses from elsewhere must
# not lock the owner out); past either limit a sign-in is refused before any hashing, for
# AGORA_LOGIN_COOLOFF_MINUTES after the last counted failure. Unlock early in the admin.
AUTHENTICATION_BACKENDS = [
    "agora.login_throttle.ThrottleBackend",  # first: refuses before the next one hashes
    "django.contrib.auth.backends.ModelBackend",
]
AGORA_LOGIN_FAILURES_PER_USER_ADDRESS = int(os.environ.get("AGORA_LOGIN_FAILURES_PER_USER_ADDRESS", "5"))
AGORA_LOGIN_FAILURES_PER_ADDRESS = int(os.environ.get("AGORA_LOGIN_FAILURES_PER_ADDRESS", "20"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = AGORA_LOGIN_FAILURES_PER_USER_ADDRESS  # what axes reports; ThrottleHandler decides
AXES_HANDLER = "agora.login_throttle.ThrottleHandler"
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("AGORA_LOGIN_COOLOFF_MINUTES", "15")))
# A refused attempt is not counted (no write, and the cool-off is not pushed further out).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "agora.login_throttle.locked_out"
# No "AXES: BEGIN" line at every start of every command; failures and lockouts are still logged.
AXES_VERBOSE = False

# LOG_FORMAT=json writes one JSON object per line, for a log collector. Either way a line logged
# while a debate runs names the debate and its runner (agora.logs).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "plain").strip().lower() or "plain"
if LOG_FORMAT not in ("plain", "json"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        f"LOG_FORMAT={os.environ['LOG_FORMAT']!r}: use plain (the default) or json (one JSON object per line)"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"debate": {"()": "agora.logs.DebateFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(debate_tag)s%(message)s"},
        "json": {"()": "agora.logs.JsonLinesFormatter"},
    },
    "handlers": {"stdout": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["debate"]}},
    "root": {"handlers": ["stdout"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # One line per HTTP request to the model server is noise at INFO.
    "loggers": {"httpx2": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}

# --- Agora ---------------------------------------------------------------------------------
# The default LLM provider. With OPENAI_BASE_URL unset the bundled local model serves.
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
# Where OPENAI_API_KEY (the default provider's key) may be sent when a Provider row names it: each
# a host (https on 443) or an origin (http://10.0.0.5:8000; a key goes to one scheme, host and
# port); empty means OPENAI_BASE_URL's origin (https://api.openai.com when that is unset); "*" any.
OPENAI_API_KEY_HOSTS = env_list("OPENAI_API_KEY_HOSTS", "")
# A provider's address is where the server sends requests: loopback, private and link-local ones
# (this machine's services, the LAN) take the use_private_provider_addresses permission, which
# superusers have, so staff cannot turn "Test connection" into a port scanner. Networks listed
# here (CIDRs, e.g. the team's GPU box "10.0.0.0/24") are open to every provider editor. Cloud
# metadata addresses (169.254.0.0/16, 100.100.100.200) are refused to everyone.
AGORA_PROVIDER_ALLOWED_NETWORKS = env_list("AGORA_PROVIDER_ALLOWED_NETWORKS", "")
AGORA_MODEL = os.environ.get("AGORA_MODEL", "")
# Besides AGORA_MODEL, the models users who are not staff may name on the default provider: it
# runs on the operator's key, and any name would let anyone pick the dearest model. Staff name any.
AGORA_DEFAULT_MODELS = env_list("AGORA_DEFAULT_MODELS", "")
AGORA_PROVIDER_CONCURRENCY = int(os.environ.get("AGORA_PROVIDER_CONCURRENCY", "4"))
AGORA_PROVIDER_TIMEOUT = float(os.environ.get("AGORA_PROVIDER_TIMEOUT", "120"))
# Retries of a failed call that may succeed later (429, 5xx, a dropped connection, a malformed or
# empty reply) before the turn fails, and the first backoff in seconds (doubling per retry, with
# jitter; a longer Retry-After from the server wins).
AGORA_PROVIDER_RETRIES = int(os.environ.get("AGORA_PROVIDER_RETRIES", "3"))
AGORA_PROVIDER_BACKOFF = float(os.environ.get("AGORA_PROVIDER_BACKOFF", "0.5"))
AGORA_LOCAL_MODEL = os.environ.get("AGORA_LOCAL_MODEL", "")
# Where debates run: "inprocess" (default: inside the web server, no other service) or "worker"
# (queued through Django's Tasks API to `manage.py agora_worker` processes; needs a shared database,
# and REDIS_URL so viewers on any web process see any worker's tokens).
AGORA_RUNNER = os.environ.get("AGORA_RUNNER", "inprocess")
# How many web processes run debates in-process side by side on one database (`manage.py serve
# --processes N` sets it for its children; needs REDIS_URL). Above 1, a process resumes only the
# debates whose runner went silent, never one a sibling still drives.
AGORA_PROCESSES = int(os.environ.get("AGORA_PROCESSES", "1"))
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend"
        if AGORA_RUNNER == "worker"
        else "debates.task_backends.InProcessBackend"
    }
}
# How many threads run the synchronous part (views, templates, ORM) of HTTP requests, shared by
# all of them (agora/page_threads.py). A web process in front of workers streams tokens it does
# not make: there a burst of page loads, each on a thread of its own, starves the loop relaying them,
# and 2 shared threads are the default. Where debates run in the web process, Django's own thread per
# request (0) measured better, and is the default.
AGORA_PAGE_THREADS = int(os.environ.get("AGORA_PAGE_THREADS", "2" if AGORA_RUNNER == "worker" else "0"))
# A runner renews its lease on a debate every AGORA_HEARTBEAT seconds; a lease silent for
# AGORA_LEASE_SECONDS is stale and another worker resumes the debate.
AGORA_HEARTBEAT = float(os.environ.get("AGORA_HEARTBEAT", "2"))
AGORA_LEASE_SECONDS = float(os.environ.get("AGORA_LEASE_SECONDS", "15"))
# How many debates one user may have running at once (new, resumed, retried or continued).
AGORA_MAX_RUNNING_PER_USER = int(os.environ.get("AGORA_MAX_RUNNING_PER_USER", "3"))
# Which environment variables a Provider row may name as its key: shell-style patterns, each
# optionally bound to hosts ("DEEPSEEK_API_KEY@api.deepseek.com"). Django's own secrets are
# never allowed, whatever the patterns say (debates/provider_keys.py).
AGORA_PROVIDER_KEY_VARS = env_list("AGORA_PROVIDER_KEY_VARS", "*_API_KEY")
# Keys entered on the "Connect a model" page are stored encrypted with a key derived from this
# (never from SECRET_KEY). Empty: a random one generated once into a file beside the SQLite database
# (AGORA_KEY_ENCRYPTION_KEY_FILE to choose it). Old values stay readable from _FALLBACKS
# (comma-separated) until `manage.py rotate_provider_keys` re-encrypts (debates/key_vault.py).
AGORA_KEY_ENCRYPTION_KEY = os.environ.get("AGORA_KEY_ENCRYPTION_KEY", "")
AGORA_KEY_ENCRYPTION_KEY_FALLBACKS = env_list("AGORA_KEY_ENCRYPTION_KEY_FALLBACKS", "")
AGORA_KEY_ENCRYPTION_KEY_FILE = os.environ.get("AGORA_KEY_ENCRYPTION_KEY_FILE", "")
# Live views open at once (the live page's WebSockets, the API's event streams, MCP's requests and
# the OpenAI door's completions together), per signed-in user (or per address for visitors without
# an account) and per debate, in each web process. Past the cap a socket is closed with code 4429
# and a request refused with HTTP 429.
AGORA_WS_PER_USER = int(os.environ.get("AGORA_WS_PER_USER", "20"))
AGORA_WS_PER_DEBATE = int(os.environ.get("AGORA_WS_PER_DEBATE", "500"))
# How often (seconds) the API tokens of a process's open requests are checked, all in one query
# (debates/api/live_tokens.py): a revoked token's streams end within about this long. A stream
# over stdio (`manage.py mcp`) asks for its own token as often.
AGORA_STREAM_RECHECK = float(os.environ.get("AGORA_STREAM_RECHECK", "0.5"))
# The proxies whose X-Forwarded-For (and X-Forwarded-Proto) is believed: addresses or CIDRs. Only
# a request whose TCP peer is one of them has a forwarded address; from anyone else the header is
# the client's own word (agora/proxies.py). Behind the documented proxy (BEHIND_HTTPS_PROXY, nginx
# on the same host) loopback is the default; otherwise none.
AGORA_TRUSTED_PROXIES = env_list("AGORA_TRUSTED_PROXIES", "127.0.0.1,::1" if BEHIND_HTTPS_PROXY else "")
# The longest one turn may take, start to end, whatever the server streams meanwhile: past it the
# turn fails (keeping its text) and can be retried.
AGORA_TURN_DEADLINE = float(os.environ.get("AGORA_TURN_DEADLINE", "600"))
AGORA_CACHE_DIR = Path(os.environ.get("AGORA_CACHE_DIR", Path.home() / ".cache" / "agora"))
# Research (web search and page fetches for the evidence pack). Off unless a backend is named here
# or a Search provider row exists in the admin. AGORA_SEARCH_BACKEND: "searxng" (self-hosted; its
# base URL in AGORA_SEARCH_URL, JSON output enabled) or "brave" (Brave Search API; the *name* of
# the variable holding the key in AGORA_SEARCH_KEY_VAR, which AGORA_PROVIDER_KEY_VARS must allow).
AGORA_SEARCH_BACKEND = os.environ.get("AGORA_SEARCH_BACKEND", "")
AGORA_SEARCH_URL = os.environ.get("AGORA_SEARCH_URL", "")
AGORA_SEARCH_KEY_VAR = os.environ.get("AGORA_SEARCH_KEY_VAR", "")
AGORA_SEARCH_TIMEOUT = float(os.environ.get("AGORA_SEARCH_TIMEOUT", "15"))
# Pages are fetched only from public addresses (no loopback, private, link-local or metadata
# addresses, whatever a search result or a redirect points to). An operator may allow networks
# here, as CIDRs: "10.0.0.0/8,192.168.1.0/24".
AGORA_FETCH_ALLOWED_NETWORKS = env_list("AGORA_FETCH_ALLOWED_NETWORKS", "")
# Uploaded documents on the start form: how many and how large (bytes) each.
AGORA_UPLOAD_MAX_FILES = int(os.environ.get("AGORA_UPLOAD_MAX_FILES", "5"))
AGORA_UPLOAD_MAX_BYTES = int(os.environ.get("AGORA_UPLOAD_MAX_BYTES", str(5 * 1024 * 1024)))
# Request bodies past these sizes are refused (413) before they are read (agora/body_limit.py).
# Any URL: the start form's largest post, i.e. every document at its largest, the non-file fields
# Django reads into memory (DATA_UPLOAD_MAX_MEMORY_SIZE, Django's default, named for this sum) and
# 1 MB for the multipart framing: 28.5 MB by default. The JSON API (/api/, /openai/) has no uploads
# and Django reads its bodies whole, so it accepts what Django would read: 2.5 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
AGORA_MAX_BODY_BYTES = int(
    os.environ.get("AGORA_MAX_BODY_BYTES")  # empty (compose.yaml passes it so) means the default
    or AGORA_UPLOAD_MAX_FILES * AGORA_UPLOAD_MAX_BYTES + DATA_UPLOAD_MAX_MEMORY_SIZE + 1024 * 1024
)
AGORA_MAX_API_BODY_BYTES = int(os.environ.get("AGORA_MAX_API_BODY_BYTES") or DATA_UPLOAD_MAX_MEMORY_SIZE)
# AGORA_MAX_BODY_BYTES applies only where an upload is expected (the start form, the admin's
# manifest import) and only to a request with a session cookie; any other page takes what Django
# reads of a form anyway (DATA_UPLOAD_MAX_MEMORY_SIZE). A request with neither a session cookie nor
# an Authorization header, and the sign-in form and the audience's forms whoever posts them, get at
# most 64 KB: the largest of those forms (sign-in, first-run set-up, an audience question) is a few KB.
AGORA_MAX_FORM_BODY_BYTES = int(os.environ.get("AGORA_MAX_FORM_BODY_BYTES") or DATA_UPLOAD_MAX_MEMORY_SIZE)
AGORA_MAX_ANONYMOUS_BODY_BYTES = int(os.environ.get("AGORA_MAX_ANONYMOUS_BODY_BYTES") or 64 * 1024)
# The bodies one web process receives and holds at once, together (agora/body_budget.py): past it a
# request is answered 503 with Retry-After at its headers. 64 MB: two of the largest uploads.
AGORA_MAX_BODIES_BYTES = int(os.environ.get("AGORA_MAX_BODIES_BYTES") or 64 * 1024 * 1024)
# Seconds a connection has to send its request line and headers (also how long an idle kept-alive
# connection stays open), and how long a body may stall; after those first seconds a body must keep
# coming at AGORA_BODY_MIN_RATE bytes/s on average (agora/read_deadlines.py). 0 turns one off.
AGORA_HEADER_TIMEOUT = float(os.environ.get("AGORA_HEADER_TIMEOUT") or 10)
AGORA_BODY_TIMEOUT = float(os.environ.get("AGORA_BODY_TIMEOUT") or 20)
AGORA_BODY_MIN_RATE = int(os.environ.get("AGORA_BODY_MIN_RATE") or 10_000)
# A person at the table has this many seconds to write their turn; then a model speaks for them or
# the turn passes, as the start form chose.
AGORA_HUMAN_DEADLINE = float(os.environ.get("AGORA_HUMAN_DEADLINE", "600"))
# The live audience without an account (docs/audience.md): a browser that drops its voter cookie is
# a new viewer each time, so what anonymous viewers may do is also counted per address (an IPv6
# /64 is one) and per share link. Per address: votes per phase and up-votes per question (a class
# of 30 behind one NAT votes whole), questions per debate and the seconds between two of them.
# Per link: the same, for every address together. Signed-in viewers keep their per-user rules.
AGORA_AUDIENCE_PER_ADDRESS = int(os.environ.get("AGORA_AUDIENCE_PER_ADDRESS", "30"))
AGORA_AUDIENCE_QUESTIONS_PER_ADDRESS = int(os.environ.get("AGORA_AUDIENCE_QUESTIONS_PER_ADDRESS", "15"))
AGORA_AUDIENCE_ADDRESS_INTERVAL = int(os.environ.get("AGORA_AUDIENCE_ADDRESS_INTERVAL", "10"))
AGORA_AUDIENCE_PER_LINK = int(os.environ.get("AGORA_AUDIENCE_PER_LINK", "500"))
AGORA_AUDIENCE_QUESTIONS_PER_LINK = int(os.environ.get("AGORA_AUDIENCE_QUESTIONS_PER_LINK", "100"))
# The moderated chair takes a question by itself only with this many signed-in up-voters besides
# its asker (anonymous up-votes can be stuffed; accounts are made by the operator).
AGORA_AUDIENCE_CHAIR_UPVOTERS = int(os.environ.get("AGORA_AUDIENCE_CHAIR_UPVOTERS", "3"))
# USD per million input and output tokens of the default provider ("0.27,1.1"), when the offline
# price table (genai-prices) does not know its model; Provider rows carry their own in the admin.
AGORA_PRICE_PER_MTOK = os.environ.get("AGORA_PRICE_PER_MTOK", "")
