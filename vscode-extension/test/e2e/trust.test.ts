/**
 * VS Code's Workspace Trust (issue 20): a code-server started without `--disable-workspace-trust`, a cloned
 * folder opened in Restricted Mode. The panel works and says what is off; the folder's VS Code settings cannot
 * choose the program the extension starts; the folder's own agent hook does not run (the bridge keeps it inert
 * when told `folderTrust: "restricted"`); trusting the folder restarts the bridge with its configuration and
 * the conversation goes on — and then the hook runs (the control: the hook is real).
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import type { FrameLocator } from "playwright-core";
import { poll } from "../poll";
import { type CodeServer, openPanel, sendPrompt, startCodeServer } from "./codeServer";

const shots = path.join(process.env.E2E_ARTIFACTS ?? path.resolve(__dirname, "../../../.artifacts/vscode-e2e"), "trust");

describe("Workspace Trust: a folder in Restricted Mode", () => {
  let cs: CodeServer;
  let panel: FrameLocator;
  let hookMarker = "";
  let serverMarker = "";
  let outside = "";
  const shot = (name: string): Promise<unknown> => cs.page.screenshot({ path: path.join(shots, `${name}.png`) });
  const send = (text: string, meanwhile?: () => Promise<void>): Promise<void> => sendPrompt(cs, panel, text, { shots, meanwhile });

  before(async () => {
    fs.mkdirSync(shots, { recursive: true });
    outside = fs.mkdtempSync(path.join(os.tmpdir(), "ab-trust-markers-"));
    serverMarker = path.join(outside, "workspace-server-command-ran");
    cs = await startCodeServer({
      workspaceTrust: true,
      // Not asked on open: the folder opens in Restricted Mode, as an untrusted clone does once the question is declined.
      settings: { "agentBridge.offlineScenario": "playground", "security.workspace.trust.startupPrompt": "never" },
      files: {
        // What a cloned repository may carry: an agent hook, and VS Code settings that pick the bridge's program.
        // (its mark in the folder, by a redirection: a folder's hooks run in the OS sandbox, which lets them write
        // only the workspace and holds the files a hook names as programs)
        ".agent-bridge/settings.json": JSON.stringify({ hooks: { UserPromptSubmit: [{ hooks: [{ type: "command", command: "echo ran > .hook-ran" }] }] } }),
        // A serverCommand that marks that it ran, then starts the bundled bridge (so it works once trusted).
        ".vscode/settings.json": JSON.stringify({
          "agentBridge.serverCommand": ["sh", "-c", `touch ${serverMarker}; exec "$(ls -d $USER_DATA/User/globalStorage/agent-bridge.agent-bridge/bridge/*/ | head -1)bin/python" -m bridge.cli.main serve "$0" "$@"`],
        }),
        "hello.py": "print('hello')\n",
      },
    });
    hookMarker = path.join(cs.workspace, ".hook-ran");
    await cs.page.locator(".statusbar", { hasText: "Restricted Mode" }).waitFor({ timeout: 60000 });
    panel = await openPanel(cs);
  });

  after(async () => {
    await shot("99-last").catch(() => undefined);
    await cs.stop();
    fs.rmSync(outside, { recursive: true, force: true });
  });

  it("works in Restricted Mode and says what is off, with the way to trust the folder", async () => {
    await panel.locator("#trust-banner:not([hidden])").waitFor({ timeout: 15000 });
    assert.match(await panel.locator("#trust-banner").innerText(), /Restricted Mode.*hooks.*MCP servers/s);
    await send("hello from a restricted folder");
    assert.match(await panel.locator(".item.agent").last().innerText(), /hello from a restricted folder/);
    assert.equal(fs.existsSync(serverMarker), false, "the folder's agentBridge.serverCommand was not run");
    await shot("02-restricted-mode-works");
  });

  it("the folder's own hook does not run on a prompt", () => {
    // The panel passes initializationOptions.folderTrust = "restricted": the bridge keeps the folder's own
    // configuration inert and asks nothing (issue 20).
    assert.equal(fs.existsSync(hookMarker), false, "the hook of an untrusted folder ran");
  });

  it("trusting the folder restarts the bridge with its configuration; the conversation goes on, and now its hook runs", async () => {
    fs.rmSync(hookMarker, { force: true });
    await panel.locator("#trust-banner button", { hasText: "Manage Workspace Trust" }).click();
    const trust = cs.page.getByRole("button", { name: /^Trust( Folder)?$/ }).first();
    await trust.waitFor({ timeout: 15000 });
    await shot("03-trust-editor");
    await trust.click();
    await cs.page.locator(".statusbar", { hasText: "Restricted Mode" }).waitFor({ state: "detached", timeout: 15000 });
    // the trust editor (a modal editor) goes, as a person would close it: the panel is in view again
    await cs.page.locator('[aria-label^="Close Modal Editor"]').click();
    await panel.locator(".item.notice", { hasText: /trusted now: the bridge restarted/ }).waitFor({ timeout: 30000 });
    await panel.locator("#trust-banner").waitFor({ state: "hidden", timeout: 10000 });
    assert.equal(await panel.locator(".item.user", { hasText: "hello from a restricted folder" }).count(), 1, "the conversation is still there");
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 60000 });
    // Trusted in VS Code, the bridge asks its own question about exactly what the folder's files would enable;
    // the turn waits for the answer.
    await send("hello from a trusted folder", async () => {
      const question = panel.locator(".item.permission.pending", { hasText: "Trust the folder" });
      await question.waitFor({ timeout: 30000 });
      assert.ok((await question.innerText()).includes("UserPromptSubmit"), "the hook command is shown verbatim");
      await shot("04-trust-question");
      await question.locator("button", { hasText: "Trust and enable them" }).click();
    });
    // Trusted, the folder's settings count: its hook runs and its serverCommand started the bridge (the controls).
    await poll("the trusted folder's hook to run", () => fs.existsSync(hookMarker), 15000, 100);
    assert.equal(fs.existsSync(serverMarker), true, "trusted, the folder's agentBridge.serverCommand is used");
    await shot("05-trusted");
  });
});
