"""deploy/compose.yaml, its Dockerfile and docs/deployment.md agree with the code (no Docker
engine runs here: the structure is what is checked). tests/test_deployment.py runs the same
processes for real, on a standalone PostgreSQL."""

import re
from pathlib import Path

import yaml

from memory_platform.settings import Settings, variable

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
SERVICES = {"postgres", "code", "webserver", "daemon", "serve"}
SETTINGS = {variable(name) for name in Settings.model_fields}


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def env(service: dict) -> dict[str, str]:
    return {k: str(v) for k, v in (service.get("environment") or {}).items()}


def test_the_compose_file_has_the_services_the_document_names():
    services = compose()["services"]
    assert set(services) == SERVICES
    doc = (REPO / "docs" / "deployment.md").read_text()
    table = re.findall(r"^\| `([a-z]+)` \|", doc, re.M)
    assert set(table) == SERVICES, "docs/deployment.md's service table"
    assert services["postgres"]["image"] == "pgvector/pgvector:pg16"
    for name in SERVICES - {"postgres"}:
        assert services[name]["build"]["dockerfile"] == "deploy/Dockerfile"
        assert services[name]["image"] == services["code"]["image"]  # one image


def test_every_variable_is_one_the_code_reads():
    named = set()
    for service in compose()["services"].values():
        named |= {k for k in env(service) if k.startswith("MEMORY_PLATFORM_")}
    assert named and named <= SETTINGS, named - SETTINGS
    doc = (REPO / "docs" / "deployment.md").read_text()
    in_doc = set(re.findall(r"MEMORY_PLATFORM_[A-Z_]+[A-Z]", doc))
    assert in_doc <= SETTINGS, in_doc - SETTINGS
    example = (REPO / "dagster.yaml.example").read_text()
    workspace = (DEPLOY / "workspace.yaml").read_text()
    dagster_vars = set(re.findall(r"env: (DAGSTER_[A-Z_]+)", example + workspace))
    assert dagster_vars == {"DAGSTER_POSTGRES_URL", "DAGSTER_CODE_HOST", "DAGSTER_CODE_PORT"}
    for name in ("code", "webserver", "daemon", "serve"):
        assert dagster_vars <= set(env(compose()["services"][name])), name
    assert dagster_vars <= set(re.findall(r"DAGSTER_[A-Z_]+[A-Z]", doc))


def test_the_memory_data_and_dagster_s_storage_are_two_databases_on_one_server():
    services = compose()["services"]
    app = env(services["serve"])
    memory = re.fullmatch(r"postgresql://([^:]+):(\$\{[^}]+\})@postgres:5432/(\w+)",
                          app["MEMORY_PLATFORM_DATABASE_URL"])
    dagster = re.fullmatch(r"postgresql://([^:]+):(\$\{[^}]+\})@postgres:5432/(\w+)",
                           app["DAGSTER_POSTGRES_URL"])
    assert memory and dagster
    assert memory.group(3) == services["postgres"]["environment"]["POSTGRES_DB"]
    assert dagster.group(3) != memory.group(3)
    init = (DEPLOY / "postgres-init.sql").read_text()
    assert f"CREATE DATABASE {dagster.group(3)};" in init
    assert "CREATE EXTENSION IF NOT EXISTS vector;" in init
    mounted = [v for v in services["postgres"]["volumes"] if "postgres-init.sql" in v]
    assert mounted and mounted[0].split(":")[1].startswith("/docker-entrypoint-initdb.d/")
    # the webserver and the daemon run none of our code: no memory database, no LLM key
    for name in ("webserver", "daemon"):
        assert not any(k.startswith(("MEMORY_PLATFORM_", "ANTHROPIC_", "OPENAI_"))
                       for k in env(services[name])), name


def test_the_commands_use_the_workspace_and_the_code_server_s_port():
    services = compose()["services"]
    port = env(services["code"])["DAGSTER_CODE_PORT"]
    code = services["code"]["command"]
    assert code[:3] == ["dagster", "code-server", "start"]
    assert code[code.index("-p") + 1] == port and code[code.index("-m") + 1] == (
        "memory_platform.definitions")
    assert env(services["code"])["DAGSTER_CODE_HOST"] == "code"
    assert services["code"]["healthcheck"]["test"][1:5] == ["dagster", "api",
                                                            "grpc-health-check", "-p"]
    for name in ("webserver", "daemon"):
        command = services[name]["command"]
        workspace = command[command.index("-w") + 1]
        assert (REPO / workspace).is_file() and workspace == "deploy/workspace.yaml"
        assert services[name]["depends_on"]["code"]["condition"] == "service_healthy"
    serve = services["serve"]["command"]
    assert serve[:2] == ["memory-platform", "serve"]
    assert serve[serve.index("--host") + 1] == "0.0.0.0"
    # off loopback, serve requires a token: compose refuses to start without one
    assert ":?" in env(services["serve"])["MEMORY_PLATFORM_API_TOKEN"]
    for name in ("webserver", "serve"):  # published on the host's loopback only
        assert all(p.startswith("127.0.0.1:") for p in services[name]["ports"]), name


def test_the_dockerfile_builds_what_the_services_run():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (.+) \S+$", dockerfile, re.M)
    for line in copied:
        for source in line.split():
            assert (REPO / source).exists(), source
    assert 'cp dagster.yaml.example "$DAGSTER_HOME/dagster.yaml"' in dockerfile
    assert "ENV PYTHONUNBUFFERED=1" in dockerfile and "DAGSTER_HOME=/opt/dagster/home" in (
        dockerfile)
    assert re.search(r"^USER (?!root)\w+", dockerfile, re.M)  # not as root
    # compose's volumes mount where the image keeps them
    services = compose()["services"]
    home = env(services["serve"])["MEMORY_PLATFORM_HOME"]
    assert f"MEMORY_PLATFORM_HOME={home}" in dockerfile
    assert f"home:{home}" in services["code"]["volumes"]
    assert "dagster-storage:/opt/dagster/home/storage" in services["webserver"]["volumes"]
