"""Agent Skills and plugins end to end (issue 27): the model — the offline API, scripted — sees only names and
descriptions first, loads a skill with the Skill tool, reads its reference, runs its script under the sandbox;
the same skill as `/name` from the editor, the terminal and ACP; a plugin's parts all load; an untrusted
project's skill cannot widen permissions."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.e2e.harness import Answers, reject_once, run_agent, running_editor, text_response, tool_response

BODY = "PDF-SKILL-BODY: read references/forms.md, then run scripts/fill.py with the file"


def pdf_skill(project: Path) -> Path:
    """A skill shaped like the published document skills: instructions, a reference, a script, allowed-tools."""
    folder = project / ".claude" / "skills" / "pdf-forms"
    (folder / "references").mkdir(parents=True)
    (folder / "scripts").mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: pdf-forms\ndescription: Fill in PDF forms. Use when the user asks to fill a PDF.\n"
        "allowed-tools: Bash(python3 .claude/skills/pdf-forms/scripts/fill.py *)\n"
        f"argument-hint: <file>\n---\n{BODY} $ARGUMENTS\n"
    )
    (folder / "references" / "forms.md").write_text("FORM-REFERENCE: the fields are name and date\n")
    (folder / "scripts" / "fill.py").write_text(
        "import sys, pathlib\npathlib.Path('filled.txt').write_text('filled ' + sys.argv[1])\n"
    )
    return folder


SCRIPT = "python3 .claude/skills/pdf-forms/scripts/fill.py a.pdf"


def skill_turn(folder: Path) -> list[dict[str, Any]]:
    return [
        tool_response(("Skill", {"skill": "pdf-forms", "args": "a.pdf"})),
        tool_response(("Read", {"file_path": str(folder / "references" / "forms.md")})),
        tool_response(("Bash", {"command": SCRIPT})),
        text_response("filled"),
    ]


def tool_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(b.get("content"))
        for m in body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


async def test_the_model_sees_descriptions_loads_the_skill_reads_its_reference_and_runs_its_script(
    workspace: Path, data_dir: Path
) -> None:
    folder = pdf_skill(workspace)
    async with running_editor({"responses": skill_turn(folder)}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "fill a.pdf") == {"stopReason": "end_turn"}
        first, last = editor.model.valid_requests[0].body, editor.model.valid_requests[-1].body
        asked = list(editor.permission_requests)
    [tool] = [t for t in first["tools"] if t["name"] == "Skill"]
    assert "- pdf-forms: Fill in PDF forms. Use when the user asks to fill a PDF." in tool["description"]
    assert BODY not in json.dumps(first), "the body is read only when the skill is used"
    results = tool_results(last)
    assert BODY in results[0] and str(folder) in results[0] and "FORM-REFERENCE" in results[1]
    assert (workspace / "filled.txt").read_text() == "filled a.pdf", "the script ran (sandboxed, in the workspace)"
    assert asked == [], "the trusted folder's skill allowed its script for the turn"


async def test_an_untrusted_projects_skill_cannot_widen_permissions(workspace: Path, data_dir: Path) -> None:
    folder = pdf_skill(workspace)

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        if "trust" in (params.get("_meta") or {}):
            return {"outcome": {"outcome": "selected", "optionId": "not_now"}}
        return await reject_once(params)

    async with running_editor(
        {"responses": skill_turn(folder)}, workspace, data_dir, env={"AGENT_BRIDGE_TRUST_FOLDER": ""}
    ) as editor:
        editor.on_permission = answer
        sid = await editor.new_session()
        await editor.prompt(sid, "fill a.pdf")
        titles = [r["toolCall"]["title"] for r in editor.permission_requests]
    assert any("trust" in t.lower() for t in titles) and any("fill.py" in t for t in titles), titles
    assert not (workspace / "filled.txt").exists(), "its allowed-tools did not hold: the script asked, was refused"


async def test_the_skill_as_a_slash_command_in_the_editor_and_over_acp(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    pdf_skill(workspace)
    async with running_editor({"responses": [text_response("ok")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "/pdf-forms a.pdf")
        body = editor.model.valid_requests[-1].body
        commands = [u["update"] for u in editor.updates if u["update"]["sessionUpdate"] == "available_commands_update"]
    assert f"{BODY} a.pdf" in json.dumps(body["messages"][-1])
    [pdf] = [c for c in commands[-1]["availableCommands"] if c["name"] == "pdf-forms"]
    assert pdf["description"].startswith("Skill: Fill in PDF forms") and pdf["input"] == {"hint": "<file>"}

    from tests.acp.editor import Editor, running_agent
    from tests.acp.test_conformance import FS, answer, scenario_file, text

    acp_editor = Editor()
    async with running_agent(acp_editor, scenario_file(tmp_path, [answer("ok")]), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await acp_editor.until(lambda: acp_editor.of_kind("available_commands_update", sid), what="commands")
        names = {c.name for c in acp_editor.of_kind("available_commands_update", sid)[-1].available_commands}
        await conn.prompt(session_id=sid, prompt=text("/pdf-forms b.pdf"))
    assert {"pdf-forms", "skills", "plugins", "compact"} <= names
    assert [str(v) for v in acp_editor.validator.violations] == []


async def test_the_skill_as_a_slash_command_in_the_terminal(workspace: Path, tmp_path: Path) -> None:
    pdf_skill(workspace)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "d"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }
    _, out = await run_agent("run", "--offline", "echo", "/pdf-forms c.pdf", cwd=workspace, env=env)
    assert f"{BODY} c.pdf" in out, out


async def test_a_plugins_skills_commands_agents_hooks_and_servers_all_load(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    home = data_dir / "home" / ".claude"
    root = tmp_path / "cache" / "market" / "tools" / "1.0.0"
    marker = tmp_path / "plugin-hook-ran"
    fixture = str(Path(__file__).parent.parent / "fixtures" / "mcp_server.py")
    for part, content in {
        ".claude-plugin/plugin.json": {"name": "tools", "version": "1.0.0"},
        "skills/lint/SKILL.md": "---\nname: lint\ndescription: Lint the code base.\n---\nLINT-BODY\n",
        "commands/hello.md": "---\ndescription: Say hello\n---\nHELLO-COMMAND $ARGUMENTS",
        "agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews diffs.\n---\nYou review diffs.",
        "hooks/hooks.json": {
            "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"touch {marker}"}]}]}
        },
        ".mcp.json": {"mcpServers": {"helper": {"command": sys.executable, "args": [fixture]}}},
    }.items():
        path = root / part
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": {"tools@market": [{"scope": "user", "installPath": str(root)}]}})
    )
    (home / "settings.json").write_text(json.dumps({"enabledPlugins": {"tools@market": True}}))
    async with running_editor(
        {"responses": [text_response("a"), text_response("b")]},
        workspace,
        data_dir,
        initialization_options={"mcp": {"turnWait": 60}},
    ) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "/tools:hello world")
        first = editor.model.valid_requests[-1].body
        await editor.prompt(sid, "/plugins")
        await editor.prompt(sid, "/skills")
        await editor.prompt(sid, "/mcp")
        said = editor.text(sid)
    assert "HELLO-COMMAND world" in json.dumps(first["messages"])
    tools = {t["name"]: t for t in first["tools"]}
    assert "- tools:lint: Lint the code base." in tools["Skill"]["description"]
    assert "tools:reviewer" in tools["Agent"]["description"]
    assert "mcp__helper__echo" in tools, sorted(tools)
    assert marker.exists(), "the plugin's hook ran"
    assert "tools (tools@market)" in said and "user, the plugin tools" in said, said
    # lists (shown as markdown, where lines alone would run together)
    assert "Plugins loaded:\n- tools (tools@market)" in said and "Skills:\n- tools:lint (" in said, said


async def test_a_trusted_skills_rule_for_one_script_is_trust_in_that_script_as_it_was(
    workspace: Path, data_dir: Path
) -> None:
    """Found by an attack round: a folder's skill's `allowed-tools: Bash(python3 scripts/x.py)`, trusted, went on
    running the script after a pull rewrote it — the same rule in the folder's settings is bound to the script's
    content and goes off. Now the skill's is bound too: the changed script is a new item, asked again (declined
    here), and the call asks (rejected). Also within one turn: the model rewriting the script after the skill
    allowed it turns the rule off. Controls: the trusted script ran unasked."""
    folder = workspace / ".claude" / "skills" / "deploy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploy the project.\nallowed-tools: Bash(python3 scripts/x.py)\n---\nGo.\n"
    )
    (workspace / "scripts").mkdir()
    script = workspace / "scripts" / "x.py"
    script.write_text("open('TRUSTED_RAN', 'w')\n")
    call = [tool_response(("Skill", {"skill": "deploy"})), tool_response(("Bash", {"command": "python3 scripts/x.py"}))]
    rewrite = ("Write", {"file_path": str(script), "content": "open('PWNED_IN_TURN', 'w')\n"})
    scenario = {
        "responses": [
            *call,
            text_response("deployed"),
            *call,
            text_response("deployed again"),
            tool_response(("Skill", {"skill": "deploy"})),
            tool_response(("Read", {"file_path": str(script)})),
            tool_response(rewrite),
            tool_response(("Bash", {"command": "python3 scripts/x.py"})),
            text_response("done"),
        ]
    }
    # the Write of the third turn is allowed; the script it wrote must still ask
    answer = Answers(["trust", "not_now", "trust"], lambda p: "allow_once" if "Write" in str(p) else "reject_once")
    trust_texts, tool_questions = answer.trust_texts, answer.tool_questions

    async with running_editor(scenario, workspace, data_dir, env={"AGENT_BRIDGE_TRUST_FOLDER": ""}) as editor:
        editor.on_permission = answer
        await editor.prompt(await editor.new_session(), "deploy")
        assert (workspace / "TRUSTED_RAN").exists() and tool_questions == [], "the control: trusted, it ran unasked"
        script.write_text("open('PWNED_AFTER_PULL', 'w')\n")  # a pull
        await editor.prompt(await editor.new_session(), "deploy")
        assert not (workspace / "PWNED_AFTER_PULL").exists(), "the changed script did not run"
        assert len(trust_texts) == 2 and "scripts/x.py" in trust_texts[1], trust_texts
        assert any("x.py" in q for q in tool_questions), tool_questions
        script.write_text("open('TRUSTED_RAN', 'w')\n")  # back as trusted: the first item holds again
        await editor.prompt(await editor.new_session(), "deploy")
    assert not (workspace / "PWNED_IN_TURN").exists(), "rewritten within the turn, the script asked and was rejected"
    assert script.read_text() == "open('PWNED_IN_TURN', 'w')\n", tool_questions
