"""The long-running faces: `memory-platform mcp` and `memory-platform serve`."""

from typing import Annotated, Optional

import typer

from memory_platform.cli.common import run
from memory_platform.settings import load_settings


def mcp_command(
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] =
        False,
    host: Annotated[str, typer.Option(help="Address for --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --http.")] = 8765,
    namespaces: Annotated[Optional[str], typer.Option(
        help="Limit the vault tools to these primary namespaces (comma-separated) and their "
             "shadows; cairn's unscoped tools are then not offered.")] = None,
) -> None:
    """Serve the MCP tools over stdio (or streamable HTTP).

    Tools: cairn_search, cairn_get, cairn_timeline, cairn_summarize_range, vault_search,
    vault_list, vault_add, vault_context."""

    def body():
        from memory_platform.api.app import is_loopback
        from memory_platform.mcp.server import serve as serve_mcp
        from memory_platform.vault.tokens import parse_namespaces

        if http and not is_loopback(host):
            raise ValueError(f"refusing to serve MCP over HTTP on {host}: bind to 127.0.0.1")
        serve_mcp("streamable-http" if http else "stdio", host=host, port=port,
                  namespaces=parse_namespaces(namespaces) if namespaces is not None else None)

    run(body)


def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
) -> None:
    """Serve the REST API and the review dashboard.

    Serve the REST API (OpenAPI at /docs) and the review dashboard (/review).

    Bound to anything but loopback, every request needs a token: MEMORY_PLATFORM_API_TOKEN
    (admin) or one from `memory-platform token create`."""

    def body():
        from memory_platform.api.app import serve as serve_api

        serve_api(host=host, port=port, token=load_settings().secret("api_token"))

    run(body)
