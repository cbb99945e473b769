"""The MCP face (server.py): cairn and vault tools, and orchard's (orchard.py), over stdio
or streamable HTTP, calling the same services as the CLI and REST."""
