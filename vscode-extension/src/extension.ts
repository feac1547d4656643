import * as os from "node:os";
import * as vscode from "vscode";
import { ApiKeyStore, redactingChannel } from "./apiKey";
import { BridgeLifecycle, offerKey } from "./bridgeLifecycle";
import { BridgeClient } from "./client";
import { registerCommands } from "./commands";
import { Conversation } from "./conversation";
import { ProposedEdits } from "./diffView";
import { EditorContext } from "./editorContext";
import { ConversationView } from "./panel/provider";
import { PanelStore } from "./panel/store";
import { WorkspaceFiles } from "./panel/workspaceFiles";
import { PermissionRequests } from "./permissionRequests";
import { PermissionPrompter } from "./permissions";
import { vscodePickers } from "./pickers";
import { route, webviewRoutes } from "./router";
import { readMcpServers, readSettings } from "./settings";
import { StatusBar } from "./status";

/** Wires the pieces together; every disposable goes into `context.subscriptions`. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Agent Bridge", { log: true });
  const keys = new ApiKeyStore(context.secrets);
  const status = new StatusBar();
  const store = new PanelStore();
  const permissions = new PermissionRequests();
  const edits = new ProposedEdits();
  const editorContext = new EditorContext();
  const files = new WorkspaceFiles();
  const view = new ConversationView(context.extensionUri, store);
  const prompter = new PermissionPrompter(permissions, edits, view);
  const conversation = new Conversation(store, permissions, {
    cwd: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir(),
    mcpServers: readMcpServers,
    defaultModel: () => readSettings().model,
    selection: () => editorContext.resource(),
    log,
    status,
    pickers: vscodePickers,
  });
  const client = new BridgeClient(log, redactingChannel(log, keys), (event) => lifecycle.onClientEvent(event));
  const lifecycle = new BridgeLifecycle(context, client, conversation, store, keys, log);
  const routes = webviewRoutes({ view, files, editorContext, conversation, permissions, prompter, log });

  context.subscriptions.push(
    log,
    keys,
    status,
    { dispose: () => store.dispose() },
    { dispose: () => permissions.dispose() },
    edits,
    editorContext,
    files,
    view,
    prompter,
    conversation,
    client,
    lifecycle,
    vscode.window.registerWebviewViewProvider(ConversationView.viewType, view),
    ...registerCommands({ conversation, view, prompter, log, keys, restart: () => lifecycle.restart() }),
    view.onMessage((message) => route(routes, message, log)),
    conversation.onSessionState((state) => {
      view.post({ type: "model", model: state.model });
      view.post({ type: "sessionState", ready: state.status === "ready" });
    }),
    editorContext.onDidChange(() => view.post({ type: "context", label: editorContext.label(), problems: editorContext.problemCount() })),
    vscode.workspace.onDidChangeWorkspaceFolders(() => view.post({ type: "workspace", folders: files.folders() })),
  );

  void lifecycle.start({ resume: false }).then(() => offerKey(context, keys));
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
