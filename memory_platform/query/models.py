"""The search answer shape shared by cairn's two network faces (REST `GET /search`, MCP
`cairn_search`), so a field added to one is not forgotten in the other."""

from datetime import datetime

from pydantic import BaseModel


class SearchHit(BaseModel):
    event_id: int
    source: str
    conversation_id: int | None
    occurred_at: datetime
    role: str
    kind: str | None = None
    project: str | None = None
    text: str
    score: float
    machine: str | None = None  # the machine it was collected on
    # Near-identical events folded into this hit (a session pasted twice): query/rerank.py
    duplicates: list[int] = []

    @classmethod
    def of(cls, hit) -> "SearchHit":
        """From a query.search.Hit (its extra fields, such as pools and ranks, left out)."""
        data = hit.to_dict()
        return cls(**{key: value for key, value in data.items() if key in cls.model_fields})
