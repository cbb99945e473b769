"""The MCP face of cairn (stdio and streamable HTTP)."""
