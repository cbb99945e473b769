"""The vault's answer shapes shared by its two faces (REST in api/vault.py, MCP in
mcp/server.py), so a field added to one is not forgotten in the other. Each face keeps its
own memory model: REST returns every column, MCP the fields an agent needs."""

from datetime import datetime
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, Field

Category = Literal["user", "feedback", "project", "reference", "decision", "episode"]
Item = TypeVar("Item", bound=BaseModel)


class VaultHit(BaseModel):
    id: int
    namespace: str
    text: str
    review: str | None
    status: str
    valid_to: datetime | None = Field(
        None, description="When the fact stopped being true (only with include_superseded).")
    superseded_by: int | None = Field(None, description="The memory that replaced it.")
    similarity: float | None
    match: str = Field(description="semantic, keyword or both")


class VaultSearchResult(BaseModel):
    query: str
    namespaces: list[str] = Field(description="The namespaces searched.")
    hits: list[VaultHit]


class Page(BaseModel, Generic[Item]):
    """One keyset page of a namespace: never clipped, always counted."""

    namespace: str
    status: str
    items: list[Item]
    total: int = Field(description="Memories of the namespace with this status, all pages.")
    next_after_id: int | None = Field(
        description="Pass as after_id for the next page; null when this page is the last.")
