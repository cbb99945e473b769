"""Found by the canary sweep: the vault's reads (REST /vault/{ns}/memories, /vault/search,
/vault/memories/{id}; MCP vault_list, vault_search; the CLI's `vault list` and `vault
search`) returned a sensitive memory's personal data verbatim, to agent tokens too. They
leave through privacy.egress now; the review page alone shows the text on purpose, beside
its masked copy (vault/queue.py), and the stored text is unchanged."""

import json

from helpers.api import HashEmbedder
from memory_platform.store import memories as memory_store
from memory_platform.vault import service
from memory_platform.vault.tokens import Scope

EMAIL = "oncall.person@example.org"
TEXT = f"the on-call contact is {EMAIL}, phone +1 415 555 0147"


def test_a_sensitive_memory_leaves_the_vault_masked_on_every_read(db):
    with db.connect() as conn:
        plain, _ = memory_store.add_memory(conn, namespace="work", actor="test",
                                           text="the api listens on 8081")
        sensitive, _ = memory_store.add_memory(conn, namespace="work", text=TEXT,
                                               actor="test")
    agent = Scope.of(["work"], agent=True)
    answers = {
        "list_page": service.list_page(db, agent, "work"),
        "list_all": service.list_all(db, Scope.everything(), "work")[0],
        "search": service.search(db, agent, "on-call contact", embedder=HashEmbedder()),
        "read": service.read(db, agent, sensitive),
    }
    for name, answer in answers.items():
        shown = json.dumps(answer, default=str)
        assert EMAIL not in shown and "555 0147" not in shown, name
        assert "[email masked]" in shown, name
    assert "the api listens on 8081" in json.dumps(answers["list_page"], default=str)
    # the stored text, and what the review page reads, are the text itself
    assert service.get(db, agent, sensitive)["text"] == TEXT
    assert service.read(db, agent, plain)["text"] == "the api listens on 8081"
