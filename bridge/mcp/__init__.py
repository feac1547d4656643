"""The MCP client: servers from `.mcp.json`, settings and the editor, on the official `mcp` SDK.

Importing this package is cheap: the SDK (~0.6 s) is imported in a worker thread when the first server
starts (bridge/mcp/sdk.py `load_sdk`). The session-facing interface is bridge/mcp/manager.py:
`McpManager.open(cwd, editor_servers, host) -> McpSession`.
"""
