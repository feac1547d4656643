import * as os from "node:os";
import * as vscode from "vscode";
import { ApiKeyStore, redactingChannel } from "./apiKey";
import { AttentionNotifier, type Presence } from "./attention";
import { BridgeLifecycle, offerKey } from "./bridgeLifecycle";
import { BridgeClient } from "./client";
import { registerCommands } from "./commands";
import { Conversations } from "./conversations";
import { ProposedEdits } from "./diffView";
import { EditorContext } from "./editorContext";
import { offerToIgnore } from "./gitIgnore";
import { ConversationView } from "./panel/provider";
import { WorkspaceFiles } from "./panel/workspaceFiles";
import { PermissionRequests } from "./permissionRequests";
import { PermissionPrompter } from "./permissions";
import { vscodePickers } from "./pickers";
import { CheckpointActions } from "./review";
import { route, webviewRoutes } from "./router";
import { readMcpServers, readSettings } from "./settings";
import { sessionModels } from "./sessionModels";
import { StatusBar } from "./status";

/** Wires the pieces together; every disposable goes into `context.subscriptions`. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Agent Bridge", { log: true });
  const keys = new ApiKeyStore(context.secrets);
  const status = new StatusBar();
  const permissions = new PermissionRequests();
  const edits = new ProposedEdits();
  const editorContext = new EditorContext();
  const files = new WorkspaceFiles();
  const models = sessionModels(context.workspaceState);
  const conversations = new Conversations(permissions, {
    cwd: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir(),
    mcpServers: readMcpServers,
    defaultModel: () => readSettings().model,
    selection: () => editorContext.resource(),
    rememberModel: models.remember,
    rememberedModel: models.recall,
    log,
    pickers: vscodePickers,
  });
  const view = new ConversationView(context.extensionUri, conversations.active.store);
  const presence: Presence = {
    seen: (sessionId) => view.visible && vscode.window.state.focused && sessionId !== undefined && conversations.active.sessionId === sessionId,
    reveal: () => view.reveal(),
  };
  const prompter = new PermissionPrompter(permissions, edits, presence);
  const client = new BridgeClient(log, redactingChannel(log, keys), (event) => lifecycle.onClientEvent(event));
  const lifecycle = new BridgeLifecycle(context, client, conversations, keys, log);
  const checkpoints = new CheckpointActions(conversations, view, () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir(), log);
  const routes = webviewRoutes({ view, files, editorContext, conversations, permissions, prompter, checkpoints, log });
  const postSession = (): void => {
    const state = conversations.active.sessionState;
    view.post({ type: "model", model: state.model, modelId: state.modelId });
    view.post({ type: "sessionState", ready: state.status === "ready", needsKey: state.needsKey });
    status.setModel(state.model);
  };
  status.follow(conversations.active.store);

  context.subscriptions.push(
    log,
    keys,
    status,
    { dispose: () => permissions.dispose() },
    edits,
    editorContext,
    files,
    view,
    prompter,
    checkpoints,
    conversations,
    client,
    lifecycle,
    new AttentionNotifier(conversations, presence, status),
    vscode.window.registerWebviewViewProvider(ConversationView.viewType, view),
    ...registerCommands({ conversations, view, prompter, log, keys, restart: () => lifecycle.restart(), resume: () => conversations.resume() }),
    view.onMessage((message) => route(routes, message, log)),
    conversations.onSessionState(postSession),
    conversations.onActiveChanged((tab) => {
      view.showStore(tab.store);
      status.follow(tab.store);
      postSession();
    }),
    conversations.onTabs((tabs) => view.post({ type: "tabs", tabs })),
    // A rule saved in a personal settings file of a git repository: offer to keep that file out of git.
    permissions.onSettled((s) => {
      const destination = s.option?.kind.endsWith("always") ? s.option._meta?.destination : undefined;
      if (destination) void offerToIgnore(destination, { state: context.workspaceState, ask: (m, ...c) => vscode.window.showInformationMessage(m, ...c), log });
    }),
    editorContext.onDidChange(() => view.post({ type: "context", label: editorContext.label(), problems: editorContext.problemCount() })),
    vscode.workspace.onDidChangeWorkspaceFolders(() => view.post({ type: "workspace", folders: files.folders() })),
  );
  view.post({ type: "tabs", tabs: conversations.tabInfo() });
  // Restricted Mode: the panel says what is off (and how to trust the folder) until trust is granted.
  view.post({ type: "trust", trust: vscode.workspace.isTrusted ? "trusted" : "restricted" });
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => view.post({ type: "trust", trust: "trusted" })));

  void lifecycle.start({ resume: false }).then(() => offerKey(context, keys));
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
