"""Property-based tests of the REST API from its own OpenAPI schema (schemathesis): for every
operation, generated inputs (valid and invalid: odd strings, NUL bytes, huge numbers,
dates at the edges, wrong types) must never produce a 5xx but the declared ones (503
database down, 502 model failed, neither happens here), and an operation that declares
the bearer must refuse a request without it (`ignored_auth`).

In-process (ASGI) over a real test database holding the access world of
tests/helpers/world.py; a few dozen examples per operation keep it near a minute on two
cores. A new route is in the schema, so it is covered without anyone adding it here."""

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import ignored_auth

from helpers.api import HashEmbedder, thread_recorder
from helpers.world import ADMIN, build
from memory_platform.api.app import create_app
from memory_platform.llm import ScriptedProvider
from memory_platform.query.embeddings import embed_missing

EXAMPLES = 30


def _summary(call) -> str:
    if "Notes about" in call.prompt:
        return '{"summary": "a day", "highlights": []}'
    return '{"points": []}'


def test_no_generated_input_gets_a_server_error(db, tmp_path):
    build(db, tmp_path)
    embedder = HashEmbedder()
    # vectors for cairn's turns, so generated searches of every mode reach the database
    # (without them a hybrid search stops at 409 before its keyword stage)
    embed_missing(db, embedder)
    app = create_app(db, token=ADMIN, embedder=embedder, vault_embedder=HashEmbedder(),
                     llm=ScriptedProvider(_summary), recorder=thread_recorder(),
                     allowed_hosts=["testserver", "localhost"])
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    # (schemathesis' pytest plugin does not run under pytest 9: its loop, by hand)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    for operation in operations:
        declared_bearer = any("HTTPBearer" in requirement
                              for requirement in operation.definition.raw.get("security", []))
        assert declared_bearer == (operation.path != "/health"), operation.label

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def generated(case):
            case.call_and_validate(headers={"Authorization": f"Bearer {ADMIN}",
                                            "X-Memory-Platform": "1"},
                                   checks=[not_a_server_error, ignored_auth])

        generated()
