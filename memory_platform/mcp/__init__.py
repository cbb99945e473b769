"""The MCP face (server.py): cairn and vault tools over stdio or streamable HTTP, calling the
same services as the CLI and REST."""
