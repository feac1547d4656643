"""Sub-agents: agent types (built-in and the user's files) and the runner that starts them for a session."""
