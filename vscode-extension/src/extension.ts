import * as vscode from "vscode";
import { BridgeClient } from "./client";
import { registerCommands } from "./commands";
import { Conversation } from "./conversation";
import { ProposedEdits } from "./diffView";
import { EditorContext } from "./editorContext";
import { ConversationView } from "./panel/provider";
import { PanelStore } from "./panel/store";
import { PermissionRequests } from "./permissionRequests";
import { PermissionPrompter } from "./permissions";
import { affectsServer, readSettings } from "./settings";
import { StatusBar } from "./status";

/** Wires the pieces together; every disposable goes into `context.subscriptions`. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Agent Bridge", { log: true });
  const status = new StatusBar();
  const store = new PanelStore();
  const permissions = new PermissionRequests();
  const edits = new ProposedEdits();
  const editorContext = new EditorContext();
  const view = new ConversationView(context.extensionUri, store, editorContext);
  const prompter = new PermissionPrompter(permissions, edits, view);
  const conversation = new Conversation(store, permissions, editorContext, status, log);
  // The server settings of the last start that did not fail: a configuration event that leaves them as they
  // are (a settings file saved twice, an unrelated key) must not restart the bridge under a running turn.
  let startedWith: string | undefined;
  const client = new BridgeClient(log, (event) => {
    if (event.kind === "failed") startedWith = undefined;
    if (event.kind === "ready") void conversation.attach(event.connection);
    else conversation.detach({ status: event.kind, message: event.kind === "failed" ? event.message : undefined });
  });

  context.subscriptions.push(
    log,
    status,
    { dispose: () => store.dispose() },
    { dispose: () => permissions.dispose() },
    edits,
    editorContext,
    view,
    prompter,
    conversation,
    client,
    vscode.window.registerWebviewViewProvider(ConversationView.viewType, view),
    ...registerCommands(conversation, view, prompter, log),
    view.onMessage((msg) => {
      switch (msg.type) {
        case "submit":
          return conversation.submit(msg.text, msg.attachContext, msg.extra);
        case "cancel":
          return conversation.cancel();
        case "permission":
          return void permissions.answer(msg.id, msg.optionId, msg.feedback);
        case "openDiff":
          return void prompter.showDiff(msg.id);
        case "setMode":
          return void conversation.setMode(msg.modeId);
        case "newSession":
          return void conversation.newSession();
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (affectsServer(e) && JSON.stringify(readSettings()) !== startedWith) void startBridge();
    }),
  );

  const startBridge = async (): Promise<void> => {
    const settings = readSettings();
    startedWith = JSON.stringify(settings);
    conversation.detach({ status: "stopped" });
    store.dispatch({ type: "connection", status: "starting" });
    status.setConnection("starting");
    await client.start(settings, vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  };
  void startBridge();
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
