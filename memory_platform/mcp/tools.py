"""How a tool is registered: with its access rule (`tool`), and with its known failures
turned into the client's error message (`clear_errors`)."""

import functools

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

UNSCOPED = "unscoped"
SCOPED = "scoped"
TOOL_RULES = "tool_rules"  # attribute of a built server: {tool name: rule}


def tool(server: MCPServer, rule: str, **options):
    """Register a tool with its access rule (UNSCOPED or SCOPED; see mcp/server.py)."""
    if rule not in (UNSCOPED, SCOPED):
        raise ValueError(f"unknown tool rule {rule!r}")

    def register(fn):
        server.tool(**options)(fn)
        rules = getattr(server, TOOL_RULES, None)
        if rules is None:
            rules = {}
            setattr(server, TOOL_RULES, rules)
        rules[options.get("name") or fn.__name__] = rule
        return fn

    return register


def clear_errors(fn):
    """Known failures reach the client as their own message (the SDK hides any other
    exception behind a generic 'Error executing tool')."""
    import psycopg

    from memory_platform.llm.base import LLMError
    from memory_platform.query.search import SearchError
    from memory_platform.store import DatabaseError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ValueError, LLMError, SearchError, DatabaseError) as exc:
            # ValueError includes query/inputs.InvalidInput: NUL bytes, lone surrogates,
            # dates out of range
            raise ToolError(str(exc)) from exc
        except psycopg.OperationalError as exc:
            # the connection died (database restarted); the next call gets a new one
            raise ToolError(f"the database is unavailable: {exc}") from exc

    return wrapper
