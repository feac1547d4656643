import * as vscode from "vscode";
import type { ApiKeyStore } from "./apiKey";
import type { Conversations } from "./conversations";
import { resourceOf } from "./editorContext";
import type { ConversationView } from "./panel/provider";
import type { PermissionPrompter } from "./permissions";

export interface CommandDeps {
  conversations: Conversations;
  view: ConversationView;
  prompter: PermissionPrompter;
  log: vscode.OutputChannel;
  keys: ApiKeyStore;
  /** A fresh bridge process (settings and key read again), the session reloaded. */
  restart: () => Promise<void>;
  /** Offers the folder's stored sessions; the chosen one opens in a tab. */
  resume: () => Promise<void>;
}

export function registerCommands({ conversations, view, prompter, log, keys, restart, resume }: CommandDeps): vscode.Disposable[] {
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration("agentBridge");
  return [
    vscode.commands.registerCommand("agentBridge.cancel", () => conversations.active.cancel()),
    vscode.commands.registerCommand("agentBridge.newSession", async () => {
      await view.reveal();
      await conversations.open();
      view.focusInput();
    }),
    vscode.commands.registerCommand("agentBridge.resumeSession", () => resume()),
    vscode.commands.registerCommand("agentBridge.setMode", (modeId?: unknown) => conversations.active.setMode(typeof modeId === "string" ? modeId : undefined)),
    vscode.commands.registerCommand("agentBridge.selectModel", () => conversations.active.selectModel()),
    vscode.commands.registerCommand("agentBridge.compact", () => conversations.submit("/compact", false)),
    vscode.commands.registerCommand("agentBridge.showLog", () => log.show()),
    vscode.commands.registerCommand("agentBridge.restart", () => restart()),
    // The key change itself restarts the bridge (extension.ts listens to the secret store).
    vscode.commands.registerCommand("agentBridge.setApiKey", async () => {
      if (!(await keys.prompt())) return;
      if (config().get<string>("offlineScenario")) {
        const off = "Use the key";
        const choice = await vscode.window.showInformationMessage("The offline playground is on (agentBridge.offlineScenario). Switch it off to use your key?", off, "Keep offline");
        if (choice === off) await config().update("offlineScenario", undefined, vscode.ConfigurationTarget.Global);
      }
      void vscode.window.showInformationMessage("Agent Bridge: API key saved in the secret storage.");
    }),
    vscode.commands.registerCommand("agentBridge.clearApiKey", async () => {
      await keys.clear();
      void vscode.window.showInformationMessage("Agent Bridge: API key removed.");
    }),
    vscode.commands.registerCommand("agentBridge.tryOffline", async () => {
      await config().update("offlineScenario", "playground", vscode.ConfigurationTarget.Global);
      await view.reveal();
      void vscode.window.showInformationMessage("Agent Bridge runs offline on its demo model (no key, no cost): type “tour” in the panel to watch a whole task, or “help” to see what else it does.");
    }),
    vscode.commands.registerCommand("agentBridge.askAboutSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) {
        void vscode.window.showInformationMessage("Select some code first.");
        return;
      }
      const resource = resourceOf(editor.document, editor.selection);
      const question = await vscode.window.showInputBox({ prompt: "Ask the agent about the selection", value: "Explain this code." });
      if (question === undefined) return;
      await view.reveal();
      conversations.submit(question || "Explain this code.", false, [resource]);
    }),
    vscode.commands.registerCommand("agentBridge.acceptEdit", () => prompter.answerActiveDiff(true)),
    vscode.commands.registerCommand("agentBridge.rejectEdit", () => prompter.answerActiveDiff(false)),
  ];
}
