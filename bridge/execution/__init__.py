"""How commands run: the OS sandbox, process trees, the registry and its watchdog, background shells, output.

The Bash tool, hooks and MCP stdio servers start their processes through this package; the tools' contract and
the tools themselves stay in bridge/tools/. This package imports no tool, loop or session module.
"""
