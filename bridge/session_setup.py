"""What a session takes from its folder and the user's settings, composed once when it opens: the permission
engine and the OS sandbox over the same rules, the folder-trust question, the plugins, skills and agent types,
the memory files and the system prompt — and what the user should hear about them (invalid settings, agent
files and skills, plugins that did not load, memory skipped). The session itself only runs turns
(bridge/session.py). What is read here is read once: a skill added mid-session reaches the next session, so the
prompt's cached prefix never changes under a session."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from bridge.agents.loader import AgentCatalog, load_catalog
from bridge.config import BridgeConfig
from bridge.execution.sandbox import Sandbox
from bridge.memory import Memory, load_memory
from bridge.messages import Block
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import MODES, parse_mode
from bridge.permissions.own_secrets import OwnSecrets
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.permissions.trust import Ask, Tell, TrustPrompt
from bridge.plugins import PluginSet, load_plugins, plugin_hooks, plugin_items
from bridge.prompt import environment_section, system_prompt
from bridge.skills import SkillCatalog, load_skills, skill_items
from bridge.tools.registry import rule_grammar


@dataclass
class SessionSetup:
    settings: SettingsStore
    engine: PermissionEngine
    sandbox: Sandbox  # the OS sandbox under Bash, from the engine's rules
    trust: TrustPrompt  # the folder's own settings wait for the user's trust
    agent_types: AgentCatalog
    plugins: PluginSet
    skills: SkillCatalog
    memory: Memory
    system: list[Block]  # the system prompt before any MCP server's instructions
    environment: str  # what a sub-agent's prompt says of the environment (memory included)

    @classmethod
    def compose(cls, cwd: Path, config: BridgeConfig, settings: SettingsStore, *, interactive: bool) -> SessionSetup:
        engine = PermissionEngine(
            cwd=cwd,
            settings=settings,
            grammar=rule_grammar(),
            mode=parse_mode(config.permission_mode) if config.permission_mode in MODES else None,
            session_rules=RuleSet.of(allow=config.allow, ask=config.ask, deny=config.deny),
            additional_dirs=[cwd / Path(d).expanduser() for d in config.additional_directories],
            interactive=interactive,
            secrets=OwnSecrets.of(config.data_dir, settings.claude_home, cwd=cwd, config_dir=settings.user_config_dir),
        )
        sandbox = Sandbox.for_engine(engine)  # masks the engine's secrets for commands
        engine.unsandboxed = lambda: sandbox.unavailable
        engine.sandboxed = lambda: sandbox.enforced
        engine.hooks.sandbox = sandbox  # the folder's own hooks run in it (bridge/permissions/hooks.py)
        settings.trust.hooks_contained = lambda: sandbox.holds_folder_hooks  # (then one unbindable may be trusted)
        memory = load_memory(cwd)
        environment = environment_section(cwd) + (f"\n\n{memory.section}" if memory.section else "")
        plugins = load_plugins(cwd, settings.claude_home, settings.trust.admits)
        for issue in settings.set_plugin_hooks({p.name: plugin_hooks(p) for p in plugins.plugins}):
            plugins.skipped.append(f"{issue.file}: {issue.message}")
        dirs = {"user_config_dir": settings.user_config_dir, "claude_home": settings.claude_home}
        skills = load_skills(cwd, plugins=plugins.skill_folders(), **dirs)
        return cls(
            settings=settings,
            engine=engine,
            sandbox=sandbox,
            trust=TrustPrompt(
                settings, cwd, lambda: skill_items(skills, cwd) + plugin_items(cwd), lambda: sandbox.holds_folder_hooks
            ),
            agent_types=load_catalog(cwd, plugins=plugins.agent_folders(), **dirs),
            plugins=plugins,
            skills=skills,
            memory=memory,
            system=system_prompt(cwd, memory=memory.section),
            environment=environment,
        )

    def settings_problems(self) -> list[str]:
        return [f"{issue.file}: {issue.message}" for issue in self.engine.errors] + self.sandbox.problems()

    def startup_notices(self) -> list[str]:
        """What the user should hear when the session opens: invalid settings, agent files and memory files
        skipped."""
        return (
            [f"Invalid settings (skipped): {problem}" for problem in self.settings_problems()]
            + [f"Invalid agent file (skipped): {problem}" for problem in self.agent_types.problems]
            + [f"Skill skipped: {problem}" for problem in self.skills.problems]
            + [f"Plugin not loaded: {problem}" for problem in self.plugins.skipped]
            + [f"Memory file skipped: {problem}" for problem in self.memory.skipped]
        )

    async def settle_trust(self, ask: Ask | None, tell: Tell, *, mode_chosen: bool) -> None:
        """Before anything of a turn runs (its hooks included): ask about the folder's own settings nobody has
        answered yet; a permissive `defaultMode` just admitted applies if the session is still in its start mode
        and no one chose one (`mode_chosen`)."""
        admitted = await self.trust.before_turn(ask, tell)
        mode = self.settings.default_mode
        starting = not mode_chosen and self.engine.mode == "default"
        if any(i.kind == "defaultMode" for i in admitted) and mode and starting:
            with contextlib.suppress(Exception):  # bypass disabled: the mode stays
                self.engine.set_mode(mode)
