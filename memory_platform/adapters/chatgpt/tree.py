"""The shape of a ChatGPT conversation's `mapping`: parents before children, and the branch
the UI showed (FORMATS 3.4)."""

from datetime import datetime, timezone
from typing import Any

_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


def parents_first(nodes: dict[str, dict[str, Any]], parent_of: dict[str, str | None]) -> list[str]:
    """Mapping order, except that every node comes after its ancestors (consumers may
    link parent rows), robust to cycles."""
    order: list[str] = []
    done: set[str] = set()
    for node_id in nodes:
        chain: list[str] = []
        in_chain: set[str] = set()
        current: str | None = node_id
        while current is not None and current not in done and current not in in_chain:
            chain.append(current)
            in_chain.add(current)
            current = parent_of[current]
        if current is not None and current in in_chain:
            # a parent cycle: cut it so the node nearest the loop becomes a root
            parent_of[chain[-1]] = None
        for member in reversed(chain):
            done.add(member)
            order.append(member)
    return order


def active_path(
    current: Any,
    nodes: dict[str, dict[str, Any]],
    parent_of: dict[str, str | None],
    order: list[str],
    times: dict[str, datetime],
    depth: dict[str, int],
) -> set[str]:
    """Nodes on the branch the UI showed: from current_node to the root (FORMATS 3.4)."""
    if not isinstance(current, str) or current not in nodes:
        has_children = {p for p in parent_of.values() if p is not None}
        position = {n: i for i, n in enumerate(order)}
        leaves = [n for n in nodes if n not in has_children]
        if not leaves:
            return set()
        # the latest leaf is what the UI showed last; depth breaks ties between siblings
        current = max(
            leaves, key=lambda n: (times.get(n, _OLDEST), depth.get(n, 0), position[n])
        )
    active: set[str] = set()
    node: str | None = current
    while node is not None and node not in active:
        active.add(node)
        node = parent_of.get(node)
    return active
