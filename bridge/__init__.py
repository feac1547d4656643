"""agent-bridge: a coding agent served to editors over JSON-RPC."""

__version__ = "0.1.0"
