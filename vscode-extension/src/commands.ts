import * as vscode from "vscode";
import type { Conversation } from "./conversation";
import { resourceOf } from "./editorContext";
import type { ConversationView } from "./panel/provider";
import type { PermissionPrompter } from "./permissions";

export function registerCommands(
  conversation: Conversation,
  view: ConversationView,
  prompter: PermissionPrompter,
  log: vscode.OutputChannel,
): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand("agentBridge.cancel", () => conversation.cancel()),
    vscode.commands.registerCommand("agentBridge.newSession", () => conversation.newSession()),
    vscode.commands.registerCommand("agentBridge.resumeSession", () => conversation.resumeSession()),
    vscode.commands.registerCommand("agentBridge.setMode", (modeId?: unknown) => conversation.setMode(typeof modeId === "string" ? modeId : undefined)),
    vscode.commands.registerCommand("agentBridge.showLog", () => log.show()),
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
      conversation.submit(question || "Explain this code.", false, [resource]);
    }),
    vscode.commands.registerCommand("agentBridge.acceptEdit", () => prompter.answerActiveDiff(true)),
    vscode.commands.registerCommand("agentBridge.rejectEdit", () => prompter.answerActiveDiff(false)),
  ];
}
