from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "x" * 64 + "-a-real-production-secret-with-entropy-9f8e7d6c5b4a",
    "ALLOWED_HOSTS": "evals.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://evals.example.com",
    "DATABASE_URL": "sqlite:////tmp/evalsite-deploy-check.sqlite3",
}


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"}
    }
    base.update(DJANGO_SETTINGS_MODULE="evalsite.settings", **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_configuration_passes_check_deploy_without_warnings():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_missing_secret_key_in_production_is_one_clear_line():
    env = dict(PRODUCTION_ENV)
    env["SECRET_KEY"] = ""
    result = _manage("check", **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_database_url_is_one_clear_line():
    result = _manage("check", DATABASE_URL="notadb://what")
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_database_and_broker_are_named_by_preflight():
    result = _manage(
        "preflight",
        DATABASE_URL="postgres://postgres@127.0.0.1:1/nope",
        REDIS_URL="redis://127.0.0.1:1/0",
    )
    assert result.returncode != 0
    assert "DATABASE_URL: cannot connect" in result.stderr
    assert "REDIS_URL: cannot reach the Celery broker" in result.stderr
    assert "Traceback" not in result.stderr


def test_compose_services_and_env_match_the_settings():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "judge"} <= set(services)
    settings_text = (ROOT / "evalsite" / "settings.py").read_text()
    for name in ("web", "worker"):
        env = services[name]["environment"]
        for var in (
            "DEBUG",
            "SECRET_KEY",
            "ALLOWED_HOSTS",
            "DATABASE_URL",
            "REDIS_URL",
        ):
            assert var in env, (name, var)
            assert f'"{var}"' in settings_text, var
        assert env["DATABASE_URL"].startswith("postgres://")
        assert "@postgres:" in env["DATABASE_URL"]
        assert env["REDIS_URL"].startswith("redis://redis:")
    # The image and compose run gunicorn with make serve's settings (workers from
    # the cores), listening on every interface inside the container.
    assert "gunicorn" in services["web"]["command"]
    assert "-c docker/gunicorn.conf.py" in services["web"]["command"]
    assert "celery -A evalsite worker" in services["worker"]["command"]
    assert "scoring.offline_judge" in services["judge"]["command"]
    assert services["web"]["environment"]["OFFLINE_JUDGE_URL"] == "http://judge:8011/v1"
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "collectstatic" in dockerfile and "USER evalsite" in dockerfile
    assert '"-c", "docker/gunicorn.conf.py"' in dockerfile
    assert "EVALSITE_HOST=0.0.0.0" in dockerfile
    example = (ROOT / "docker" / ".env.example").read_text()
    for var in (
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "DATABASE_URL",
        "REDIS_URL",
        "CSRF_TRUSTED_ORIGINS",
        "PORT",
    ):
        assert f"{var}=" in example


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz"])
def test_health_endpoint_needs_no_login(client, path):
    assert client.get(path).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/login/", "/api/projects"])
def test_every_response_says_how_long_the_app_took(client, path):
    """Server-Timing: what browsers' developer tools show and `make bench` reads."""
    response = client.get(path)
    name, _, duration = response["Server-Timing"].partition(";dur=")
    assert name == "app" and 0 < float(duration) < 60_000


# The trust-boundary settings.
NEW_SETTINGS = (
    "JUDGE_KEY_ENV_ALLOWED",
    "JUDGE_ALLOWED_PRIVATE_HOSTS",
    "DATASET_MAX_NESTING",
    "DATASET_MAX_CELL_CHARS",
    "LOGIN_RATE_PER_ACCOUNT",
    "LOGIN_RATE_PER_IP",
    "TRUSTED_PROXY_COUNT",
    "PROJECT_CREATE_STAFF_ONLY",
    "UPLOAD_SPOOL_MAX_BYTES",
)


def test_compose_refuses_to_start_without_a_secret_key():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    for name in ("web", "worker", "beat"):
        value = compose["services"][name]["environment"]["SECRET_KEY"]
        # ${VAR:?message}: compose stops with the message when VAR is unset or empty.
        assert value.startswith("${SECRET_KEY:?"), (name, value)
        assert ":-" not in value and "change-me" not in value
    example = (ROOT / "docker" / ".env.example").read_text()
    assert "Required: docker compose refuses to start without it" in example


def test_beat_runs_beside_the_workers_in_compose_and_make_run():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())
    services = compose["services"]
    assert services["beat"]["command"].startswith("celery -A evalsite beat")
    # The spool is written by web and swept by a worker: they share var/.
    for name in ("web", "worker", "beat"):
        assert "vardata:/app/var" in services[name]["volumes"], name
    assert "vardata" in compose["volumes"]
    procfile = (ROOT / "Procfile.dev").read_text().splitlines()
    beat = [line for line in procfile if line.startswith("beat:")]
    assert len(beat) == 1 and "celery -A evalsite beat" in beat[0]


def test_every_beat_job_names_a_registered_task():
    from django.conf import settings

    from evalsite.celery import app

    app.loader.import_default_modules()
    schedule = settings.CELERY_BEAT_SCHEDULE
    assert "dataset-uploads-cleanup" in schedule
    for entry in schedule.values():
        assert entry["task"] in app.tasks, entry["task"]
    assert str(settings.CELERY_BEAT_SCHEDULE_FILENAME).startswith(str(settings.VAR_DIR))


def test_the_scheduled_upload_sweep_is_safe_to_run_twice(settings, tmp_path):
    import time

    from django.conf import settings as live

    from evalsite.celery import app

    settings.VAR_DIR = tmp_path
    spool = tmp_path / "uploads"
    spool.mkdir()
    stale, fresh = spool / ("a" * 32 + ".upload"), spool / ("b" * 32 + ".upload")
    stale.write_bytes(b"old")
    fresh.write_bytes(b"new")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    task = app.tasks[live.CELERY_BEAT_SCHEDULE["dataset-uploads-cleanup"]["task"]]
    assert task.apply().get() == 1
    assert task.apply().get() == 0
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("name", NEW_SETTINGS)
def test_new_settings_are_documented(name):
    readme = (ROOT / "README.md").read_text()
    assert f"| `{name}` |" in readme, name
    assert f"{name}=" in (ROOT / "docker" / ".env.example").read_text(), name
    assert f'"{name}"' in (ROOT / "evalsite" / "settings.py").read_text(), name


def test_django_async_safety_check_is_on_outside_the_browser_tests():
    # tests/browser/conftest.py relaxes it around its own tests only (which run last).
    assert "DJANGO_ALLOW_ASYNC_UNSAFE" not in os.environ
