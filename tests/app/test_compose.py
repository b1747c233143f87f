"""compose.yaml is a valid Compose file (`docker compose config` where the tool is installed, the
Compose Specification's JSON schema everywhere) that wires the scale-out set-up as
docs/production.md describes it, even where containers cannot run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from testkit.servers import ROOT

COMPOSE = ROOT / "compose.yaml"
APP = ("migrate", "web", "worker")
SHARED = ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "AGORA_RUNNER")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def docker_compose() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30).returncode == 0


def test_the_file_matches_the_compose_specification_schema():
    # The schema as check-jsonschema vendors it from the compose-spec project (its license beside it).
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(not docker_compose(), reason="no `docker compose` here: the schema test stands in")
def test_docker_compose_accepts_the_file_and_demands_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    config = ["docker", "compose", "-f", str(COMPOSE), "--env-file", os.devnull, "config", "-q"]
    done = subprocess.run(config, env={**env, "SECRET_KEY": "x" * 50}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    missing = subprocess.run(config, env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "set SECRET_KEY" in missing.stderr


def test_every_dependency_names_a_service(compose):
    services = compose["services"]
    for name, service in services.items():
        assert set(service.get("depends_on", {})) <= set(services), name


def test_web_and_workers_share_one_configuration(compose):
    services = compose["services"]
    environments = [services[name]["environment"] for name in APP]
    for key in SHARED:
        assert len({str(env.get(key)) for env in environments}) == 1, key
    assert environments[0]["AGORA_RUNNER"] == "worker"
    assert environments[0]["SECRET_KEY"].startswith("${SECRET_KEY:?"), "a missing SECRET_KEY must stop compose"
    assert "@db:5432/" in environments[0]["DATABASE_URL"] and "//redis:6379" in environments[0]["REDIS_URL"]


def test_the_web_port_is_published_where_daphne_listens(compose):
    web = compose["services"]["web"]
    command = web["command"]
    port = command[command.index("-p") + 1]
    assert any(str(mapping).endswith(f":{port}") for mapping in web["ports"])
    assert f"127.0.0.1:{port}/healthz" in " ".join(web["healthcheck"]["test"])


def test_workers_scale_and_report_their_health(compose):
    worker = compose["services"]["worker"]
    assert "ports" not in worker and "container_name" not in worker, "`--scale worker=N` needs neither"
    command = worker["command"]
    assert command[:3] == ["python", "manage.py", "agora_worker"]
    port = command[command.index("--health-port") + 1]
    assert f"127.0.0.1:{port}/healthz" in " ".join(worker["healthcheck"]["test"])


def test_the_app_starts_after_migrations_and_healthy_services(compose):
    services = compose["services"]
    for name in ("web", "worker"):
        needs = {dep: rule["condition"] for dep, rule in services[name]["depends_on"].items()}
        assert needs == {
            "migrate": "service_completed_successfully",
            "db": "service_healthy",
            "redis": "service_healthy",
        }, name
    for name in ("web", "worker", "db", "redis"):
        assert services[name]["healthcheck"]["test"], name
    assert "migrate --noinput" in " ".join(services["migrate"]["command"])
    assert services["migrate"]["restart"] == "no"
    assert "pgdata:/var/lib/postgresql/data" in services["db"]["volumes"] and "pgdata" in compose["volumes"]


def test_search_is_optional_and_speaks_json(compose):
    search = compose["services"]["search"]
    assert search["profiles"] == ["search"]
    (mount,) = search["volumes"]
    source = mount.split(":", 1)[0]
    settings = yaml.safe_load((ROOT / source).read_text(encoding="utf-8"))
    assert "json" in settings["search"]["formats"]
    assert not any("search" in service.get("depends_on", {}) for service in compose["services"].values())


def test_every_variable_the_file_reads_is_in_the_example_env():
    used = set(re.findall(r"\$\{(\w+)", COMPOSE.read_text(encoding="utf-8")))
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^#? ?(\w+)=", example, re.M))
    assert used - listed == set()


def test_the_image_runs_as_a_user_and_leaves_secrets_out():
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert dockerfile.startswith("#") and "FROM python:3.11-slim" in dockerfile
    assert "collectstatic" in dockerfile and "pip install --no-deps --require-hashes -r requirements.lock" in dockerfile
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".env", ".git", ".venv", "db.sqlite3*"} <= set(ignored)


def test_a_daphne_published_directly_trusts_no_forwarded_header(compose):
    # With --proxy-headers daphne takes X-Forwarded-For's first entry as the client: published with
    # no proxy in front, that is whatever a client writes, and the per-address live-view cap is
    # passed by naming a new address each time (issue 24 #13).
    assert compose["services"]["web"]["ports"], "the web service is published"
    assert "--proxy-headers" not in compose["services"]["web"]["command"]
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    cmd = [line for line in dockerfile.splitlines() if line.startswith("CMD")]
    assert cmd and "--proxy-headers" not in cmd[-1]
