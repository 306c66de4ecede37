"""Settings for evalsite, read from the environment (django-environ).

Development defaults just work (SQLite and Celery's filesystem transport under
var/); production sets DEBUG=false and then SECRET_KEY and ALLOWED_HOSTS are required.
"""

from __future__ import annotations

import re
from pathlib import Path

import django_stubs_ext
import environ
from django.core.exceptions import ImproperlyConfigured

# Lets the generic classes django-stubs declares (QuerySet[Model], ModelAdmin[Model], ...)
# be subscripted at runtime too.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(environ.Env().str("EVALSITE_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=True)

_DEV_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-0123456789abcdef"
SECRET_KEY = env.str("SECRET_KEY", default=_DEV_SECRET_KEY if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false.")

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS",
    default=["127.0.0.1", "localhost", "[::1]", "testserver"] if DEBUG else [],
)
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is false.")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
PORT = env.int("PORT", default=8000)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",
    "evalsite.core",
    "evalsite.accounts",
    "evalsite.datasets",
    "evalsite.evals",
    "evalsite.review",
    "evalsite.compare",
    "evalsite.demo",
    "evalsite.sso",
    "evalsite.webhooks",
]

MIDDLEWARE = [
    "evalsite.core.middleware.ServerTimingMiddleware",
    # Outermost but timing, so every response gets the header, even early answers.
    "evalsite.core.middleware.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "evalsite.core.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Before any view parses the body (the CSRF check reads POST in process_view).
    "evalsite.datasets.middleware.UploadSizeLimitMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Inside MessageMiddleware: an htmx response carries its messages (out of band).
    "evalsite.lib.htmx.HtmxMessagesMiddleware",
    "evalsite.core.middleware.ApiErrorShapeMiddleware",
    # Last: its process_exception runs first (a lost database connection: 503).
    "evalsite.core.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evalsite.accounts.context_processors.projects",
                "evalsite.review.context_processors.waiting",
                "evalsite.sso.context_processors.login_options",
            ],
        },
    }
]

DATABASE_URL = env.str(
    "DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'evalsite.sqlite3'}"
)
_DB_SCHEMES = ("sqlite", "postgres", "postgresql", "pgsql", "psql")
if DATABASE_URL.split("://", 1)[0] not in _DB_SCHEMES:
    raise ImproperlyConfigured(
        f"DATABASE_URL must start with one of {', '.join(s + '://' for s in _DB_SCHEMES)}"
    )
try:
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
except Exception as exc:  # django-environ raises several types for a bad URL
    raise ImproperlyConfigured(
        f"DATABASE_URL is not a valid database URL: {exc}"
    ) from exc
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker) share the file: wait for locks instead of failing.
    # In WAL mode synchronous=NORMAL syncs at checkpoints, not at every commit: a commit
    # took 6.8 ms with FULL (SQLite's default) and 0.22 ms with NORMAL on this machine's
    # disk, and a run stores every result in a commit of its own. WAL with NORMAL
    # cannot corrupt the file; a power cut may lose the last commits, which the run
    # watchdog judges again. The embedded default is for one machine, not production.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # The aggregates group a scorer's results in one query; with Postgres' default 4 MB
    # the planner sorts on disk instead of hashing (100 ms instead of 40 ms at 50k rows).
    # PG_WORK_MEM="" leaves the server's setting alone (e.g. behind a pooler that
    # rejects startup options).
    _work_mem = env.str("PG_WORK_MEM", default="16MB")
    if _work_mem:
        DATABASES["default"].setdefault("OPTIONS", {})["options"] = (
            f"-c work_mem={_work_mem}"
        )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:dashboard"
LOGOUT_REDIRECT_URL = "accounts:login"
# Every password check is throttled there (our login page and the admin's alike).
AUTHENTICATION_BACKENDS = ["evalsite.accounts.backends.ThrottledModelBackend"]
_RATE = re.compile(r"^\d+/\d*[smhd]$")


def _login_rate(name: str, default: str) -> str:
    value: str = env.str(name, default=default).strip()
    if value and not _RATE.match(value):
        raise ImproperlyConfigured(
            f"{name} must look like 10/15m (failures per period: s, m, h or d), "
            "or be empty to turn that limit off."
        )
    return value


# Failed logins allowed per window: per account from every address together, and per
# client address over every account. Only failures count.
LOGIN_RATE_PER_ACCOUNT = _login_rate("LOGIN_RATE_PER_ACCOUNT", "10/15m")
LOGIN_RATE_PER_IP = _login_rate("LOGIN_RATE_PER_IP", "50/15m")
# Invitation link requests per client address and window that could guess or spend a
# link: every POST (accept, sign up) and every look-up of an unknown token.
INVITE_RATE_PER_IP = _login_rate("INVITE_RATE_PER_IP", "30/10m")
# Reverse proxies in front of the app that append the client's address to
# X-Forwarded-For; 0 trusts REMOTE_ADDR only. With the wrong count, either the proxy's
# address stands for every client or a client can choose its own address.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
RATELIMIT_IP_META_KEY = "evalsite.accounts.backends.client_ip"
# Only staff may create projects (the button is hidden and the view and API refuse).
PROJECT_CREATE_STAFF_ONLY = env.bool("PROJECT_CREATE_STAFF_ONLY", default=False)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Uploads: files above this stream to disk; the dataset size limit is separate.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATASET_MAX_UPLOAD_BYTES = env.int(
    "DATASET_MAX_UPLOAD_BYTES", default=200 * 1024 * 1024
)
# One row of a dataset file: JSON nesting levels (the row is the first) and characters
# per cell (a row may hold four full cells). A row past them is refused as it is read,
# so what one row can cost in memory is bounded.
DATASET_MAX_NESTING = env.int("DATASET_MAX_NESTING", default=32)
DATASET_MAX_CELL_CHARS = env.int("DATASET_MAX_CELL_CHARS", default=1_000_000)
if not 1 <= DATASET_MAX_NESTING <= 200:
    # Decoding recurses once per level: far deeper would meet Python's recursion limit.
    raise ImproperlyConfigured("DATASET_MAX_NESTING must be between 1 and 200.")
if DATASET_MAX_CELL_CHARS < 1:
    raise ImproperlyConfigured("DATASET_MAX_CELL_CHARS must be at least 1.")
# Uploads waiting between the preview and mapping steps live in VAR_DIR/uploads; all of
# them together may take this much disk, and an upload that would pass it is refused.
UPLOAD_SPOOL_MAX_BYTES = env.int("UPLOAD_SPOOL_MAX_BYTES", default=1024 * 1024 * 1024)
# Matched item pairs compare keeps per project (review.DatasetMatch; ~70 bytes each
# with the index): past it the oldest matchings are dropped (and matched again when
# a compare needs them), so compares of every pair of datasets by every key cannot
# fill the disk.
COMPARE_STORED_PAIRS_MAX = env.int("COMPARE_STORED_PAIRS_MAX", default=5_000_000)
if COMPARE_STORED_PAIRS_MAX < 1:
    raise ImproperlyConfigured("COMPARE_STORED_PAIRS_MAX must be at least 1.")
# A compare page counts the figures it has no cached ones for in the request while
# they join at most this many matched items (items × scorer pairs); beyond, it shows
# its rows at once and a worker counts the figures while the page polls. 100k is
# bench_compare's 25k items × 4 scorers, whose cold page meets its 300 ms target;
# bench_million's 200k × 5 took 1.2–1.6 s (p95) in the request.
COMPARE_FIGURES_IN_REQUEST_MAX = env.int(
    "COMPARE_FIGURES_IN_REQUEST_MAX", default=100_000
)

# API lists are paginated with limit/offset; a client cannot ask for everything at once.
NINJA_PAGINATION_PER_PAGE = 50
NINJA_PAGINATION_MAX_LIMIT = 1000

# Runs: a claimed result whose worker stops heart-beating for this long is taken over;
# the watchdog looks for lost work at the monitor interval; fan-out enqueues in chunks.
EVALS_RESULT_LEASE_SECONDS = env.float("EVALS_RESULT_LEASE_SECONDS", default=60.0)
# Unset: half the lease.
EVALS_MONITOR_INTERVAL_SECONDS = env.float(
    "EVALS_MONITOR_INTERVAL_SECONDS", default=None
)
EVALS_FANOUT_CHUNK = env.int("EVALS_FANOUT_CHUNK", default=500)
# The beat schedule's copy of evalsite.evals.conf.monitor_interval().
_MONITOR_INTERVAL = max(
    1.0, EVALS_MONITOR_INTERVAL_SECONDS or EVALS_RESULT_LEASE_SECONDS / 2
)

# Judges
OFFLINE_JUDGE_URL = env.str("OFFLINE_JUDGE_URL", default="http://127.0.0.1:8011/v1")
# Environment variables a judge may take its key from, each bound to the host it may be
# sent to: NAME@host[:port] or PREFIX*@host[:port] (NAME@* for any host). Any project
# owner can name one, so server secrets such as SECRET_KEY must never match, and a key
# goes only to its listed hosts. A bare NAME allows nothing (system check evals.W001).
JUDGE_KEY_ENV_ALLOWED = env.list(
    "JUDGE_KEY_ENV_ALLOWED", default=["OPENAI_API_KEY@api.openai.com"]
)
# Private, loopback and link-local hosts judges may reach (host, host:port, address or
# CIDR network). Public addresses are always allowed, the offline judge's host:port too,
# and loopback when DEBUG is on.
JUDGE_ALLOWED_PRIVATE_HOSTS = env.list("JUDGE_ALLOWED_PRIVATE_HOSTS", default=[])

# Webhooks (evalsite/webhooks): they reach what judges may (JUDGE_ALLOWED_PRIVATE_HOSTS).
# A failed delivery is tried this many times in all, waiting 30 s, 1 min, 2 min, ...
WEBHOOK_MAX_ATTEMPTS = env.int("WEBHOOK_MAX_ATTEMPTS", default=6)
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# Error pages and reports hide sensitive locals and POST fields even with DEBUG on.
DEFAULT_EXCEPTION_REPORTER_FILTER = (
    "evalsite.lib.debug.AlwaysSafeExceptionReporterFilter"
)

# Security: strict when not in DEBUG (python manage.py check --deploy is clean).
SECURE_CONTENT_TYPE_NOSNIFF = True
# Sent on every response: scripts and styles only from our own static files (htmx
# included), no inline script, handler attribute or eval; no framing. The Django debug
# pages (DEBUG only) go without it: they are built of inline scripts and styles.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        # Pico's icons are data: URIs in its stylesheet.
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Sessions read from the cache (Redis when configured), written through to the database.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
if not DEBUG:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    # Only plain HTTP on loopback (`make serve` under the load test) turns this off:
    # a client that is not a browser will not send a secure cookie over http://.
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool(
        "SECURE_COOKIES", default=True
    )

# A housekeeping or admin deletion of more rows than this (the object and all that
# cascades from it) is done by a worker, not in the request. bench/bench_delete.py
# deletes about 10k rows a second at a load average of 5 to 9 (a 200k-result run,
# 255k rows, in 21-25 s; a million-result one in 126 s, past gunicorn's 120 s
# timeout): 20,000 rows keep the request to about 2 s.
DELETE_INLINE_MAX_ROWS = env.int("DELETE_INLINE_MAX_ROWS", default=20_000)

# Celery: the broker is Redis when REDIS_URL is set, else the filesystem transport.
REDIS_URL = env.str("REDIS_URL", default="")
CELERY_FS_DIR = VAR_DIR / "celery"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 3600}
else:
    for _sub in ("out", "processed", "control"):
        (CELERY_FS_DIR / _sub).mkdir(parents=True, exist_ok=True)
    # Celery's filesystem transport, with atomic writes (see evalsite/lib/fstransport.py).
    CELERY_BROKER_URL = "evalsitefs://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_FS_DIR / "out"),
        "data_folder_out": str(CELERY_FS_DIR / "out"),
        "processed_folder": str(CELERY_FS_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(CELERY_FS_DIR / "control"),
        # The default 1 s poll caps each worker at `concurrency` tasks a second.
        "polling_interval": env.float("CELERY_FS_POLLING_INTERVAL", default=0.05),
    }
CACHES = {
    "default": {
        "BACKEND": "evalsite.lib.cache.RedisCache",
        "LOCATION": REDIS_URL,
        # A Redis that stopped answering fails requests (and /healthz) in seconds
        # instead of holding them; redis-py waits forever by default.
        "OPTIONS": {"socket_connect_timeout": 5, "socket_timeout": 5},
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = env.int(
    "CELERY_BROKER_CONNECTION_MAX_RETRIES", default=10
)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=600)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=660)
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Periodic jobs, sent by `celery beat` (started by `make run` and docker compose); each
# is safe to run twice, and expires rather than piling up while no worker runs.
CELERY_BEAT_SCHEDULE = {
    # Every 10 minutes: delete dataset uploads abandoned between the preview and
    # mapping steps for over an hour.
    "dataset-uploads-cleanup": {
        "task": "datasets.uploads_cleanup",
        "schedule": 600.0,
        "options": {"expires": 600},
    },
    # Every monitor interval (EVALS_MONITOR_INTERVAL_SECONDS, else half the result
    # lease, at least 1 s): the run watchdog re-queues results whose worker died once
    # their lease ran out, and work whose queued messages were lost, so a killed
    # worker's results are judged again within about a lease and a half.
    "runs-recover": {
        "task": "evals.runs_recover",
        "schedule": _MONITOR_INTERVAL,
        "options": {"expires": _MONITOR_INTERVAL},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Celery's Django fixup closes a worker's database connection before and after every
# task unless this is set; connecting to Postgres anew per task held the run benchmark
# at 64 % of its bound instead of 76-79 %. Django's own rule (CONN_MAX_AGE, health
# checks, errors) decides instead, applied around each task in evalsite/celery.py.
CELERY_DB_REUSE_MAX = 10**9

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # One line per judge HTTP request drowns everything else; JudgeCall rows keep the detail.
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
    },
}

# Single sign-on with OpenID Connect (evalsite/sso, docs/operations/sso.md): off unless
# OIDC_RP_CLIENT_ID is set. The provider's endpoints come from OIDC_OP_DISCOVERY_URL
# (its /.well-known/openid-configuration, read at the first login) unless set one by one.
OIDC_RP_CLIENT_ID = env.str("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OIDC_RP_CLIENT_SECRET", default="")
OIDC_OP_DISCOVERY_URL = env.str("OIDC_OP_DISCOVERY_URL", default="")
OIDC_OP_ISSUER = env.str("OIDC_OP_ISSUER", default="")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env.str("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env.str("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env.str("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_OP_LOGOUT_ENDPOINT = env.str("OIDC_OP_LOGOUT_ENDPOINT", default="")
OIDC_RP_SIGN_ALGO = env.str("OIDC_RP_SIGN_ALGO", default="RS256")
OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", default="openid email profile")
# The login page's button: "Log in with <name>".
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="single sign-on")
# A claim (such as "groups") and VALUE=PROJECT_ID:ROLE rules (evalsite/sso/roles.py).
OIDC_ROLE_CLAIM = env.str("OIDC_ROLE_CLAIM", default="")
OIDC_ROLE_MAP = env.str("OIDC_ROLE_MAP", default="")
OIDC_TIMEOUT = 10
OIDC_CLOCK_SKEW_SECONDS = 60
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of the provider's logout
OIDC_OP_LOGOUT_URL_METHOD = "evalsite.sso.views.provider_logout_url"
# Without the password login only the provider logs people in (the admin's too).
LOCAL_LOGIN_ENABLED = env.bool("LOCAL_LOGIN_ENABLED", default=True)
if OIDC_RP_CLIENT_ID:
    AUTHENTICATION_BACKENDS = [
        *AUTHENTICATION_BACKENDS,
        "evalsite.sso.backends.OidcBackend",
    ]
if not LOCAL_LOGIN_ENABLED:
    if not OIDC_RP_CLIENT_ID:
        raise ImproperlyConfigured(
            "LOCAL_LOGIN_ENABLED=false needs single sign-on (OIDC_RP_CLIENT_ID and the "
            "provider's settings): otherwise nobody could log in."
        )
    AUTHENTICATION_BACKENDS = [
        b
        for b in AUTHENTICATION_BACKENDS
        if b != "evalsite.accounts.backends.ThrottledModelBackend"
    ]
